"""Narrow upstream's `@ops` / `@modules` / `@dtypes` to what a manifest runs, for one template.

While one template is instantiated, its `parametrize_fn` chain is rebuilt with copies of
the `ops` / `modules` parametrizers whose lists hold only the ops/modules in scope plus the
included ones, and whose op loop also generates included dtypes upstream would not
generate. The upstream objects are never mutated; the template's attributes are restored.
Imports torch: runner only.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.testing._internal.common_device_type import ops
from torch.testing._internal.common_modules import modules
from torch.testing._internal.common_utils import compose_parametrize_fns

from test_manifests.decisions import TestInstance
from test_manifests.matching import PathRoots, module_matches, op_matches
from test_manifests.model import Manifest, TestEntry
from test_manifests.resolve import resolve
from test_manifests.rules import listed_entries, matching_file

ParametrizeFn = Callable[[Any, Any, Any], Iterator[tuple[Any, str, dict[str, Any], Any]]]


class _Template:
    """The manifest's view of one template: its listed entries and their includes."""

    def __init__(
        self, manifest: Manifest, roots: PathRoots, file: str, cls: str, name: str
    ) -> None:
        self.manifest, self.roots = manifest, roots
        self.file, self.class_name, self.name = file, cls, name
        found = matching_file(manifest, file, roots)
        self.entries: list[TestEntry] = (
            [e for _, e in listed_entries(found[1], cls, name)] if found else []
        )
        self.included_ops = [i.name for e in self.entries for i in e.edits.ops.include]
        self.included_modules = [i.name for e in self.entries for i in e.edits.modules.include]
        self.included_dtypes = sorted(
            {i.name for e in self.entries for i in e.edits.dtypes.include}
        )

    def keeps(
        self, op: str | None = None, variant: str | None = None, module: str | None = None
    ) -> bool:
        instance = TestInstance(
            self.file, self.class_name, self.name, op=op, op_variant=variant, module=module
        )
        return resolve(self.manifest, instance, self.roots).reused


def _torch_dtypes(names: list[str]) -> list[torch.dtype]:
    return [getattr(torch, name) for name in names]


def _op_list(p: ops, template: _Template) -> list[Any]:
    kept = [
        op for op in p.op_list if template.keeps(op=op.name, variant=op.variant_test_name or None)
    ]
    missing = [
        name
        for name in template.included_ops
        if not any(op_matches(name, op.name, op.variant_test_name or None) for op in kept)
    ]
    if missing:
        from torch.testing._internal.common_methods_invocations import op_db

        kept += [
            op
            for op in op_db
            if any(op_matches(name, op.name, op.variant_test_name or None) for name in missing)
        ]
    return kept


def _narrowed_ops(p: ops, template: _Template) -> ParametrizeFn:
    """Upstream's variants for the ops in scope, then the included dtypes it would not generate."""
    op_list = _op_list(p, template)
    extra_dtypes = _torch_dtypes(template.included_dtypes)

    def parametrize(test: Any, generic_cls: Any, device_cls: Any) -> Iterator[Any]:
        for op in op_list:
            upstream = copy.copy(p)
            upstream.op_list = [op]
            generated: set[Any] = set()
            for variant in upstream._parametrize_test(test, generic_cls, device_cls):
                generated.add(variant[2].get("dtype"))
                yield variant
            extras = [d for d in extra_dtypes if d not in generated]
            if extras and p.opinfo_dtypes is not None and not _is_dtype_none(p):
                extra = copy.copy(p)
                extra.op_list, extra.opinfo_dtypes, extra.allowed_dtypes = [op], extras, None
                yield from extra._parametrize_test(test, generic_cls, device_cls)

    return parametrize


def _is_dtype_none(p: ops) -> bool:
    from torch.testing._internal.common_device_type import OpDTypes

    return p.opinfo_dtypes is OpDTypes.none


def _narrowed_modules(p: modules, template: _Template) -> ParametrizeFn:
    kept = [m for m in p.module_info_list if template.keeps(module=m.name)]
    missing = [
        n for n in template.included_modules if not any(module_matches(n, m.name) for m in kept)
    ]
    if missing:
        from torch.testing._internal.common_modules import module_db

        kept += [m for m in module_db if any(module_matches(n, m.name) for n in missing)]
    narrowed = copy.copy(p)
    narrowed.module_info_list = kept
    return narrowed._parametrize_test


def _rebuild(fn: Any, template: _Template) -> Any:
    """The parametrize_fn chain with its ops/modules parametrizers narrowed."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, ops):
        return _narrowed_ops(owner, template)
    if isinstance(owner, modules):
        return _narrowed_modules(owner, template)
    if getattr(fn, "__name__", "") == "composite_fn" and fn.__defaults__:
        old, new = fn.__defaults__
        return compose_parametrize_fns(_rebuild(old, template), _rebuild(new, template))
    return fn


@contextlib.contextmanager
def narrowed_parametrizers(
    test: Any, manifest: Manifest, roots: PathRoots, file: str, class_name: str, name: str
) -> Iterator[None]:
    """Within the block, `test`'s parametrization holds only what the manifest may run."""
    template = _Template(manifest, roots, file, class_name, name)
    saved: dict[str, Any] = {
        k: getattr(test, k) for k in ("parametrize_fn", "dtypes") if hasattr(test, k)
    }
    try:
        if "parametrize_fn" in saved:
            test.parametrize_fn = _rebuild(saved["parametrize_fn"], template)
        if "dtypes" in saved and template.included_dtypes:
            test.dtypes = _with_included_dtypes(saved["dtypes"], template.included_dtypes)
        yield
    finally:
        for key, value in saved.items():
            setattr(test, key, value)


def _with_included_dtypes(dtypes: dict[str, Any], included: list[str]) -> dict[str, Any]:
    """`@dtypes` per device, plus the included dtypes (single-dtype variants only)."""
    widened = {}
    for device, values in dtypes.items():
        values = list(values)
        if values and isinstance(values[0], (list, tuple)):
            widened[device] = values
            continue
        widened[device] = values + [d for d in _torch_dtypes(included) if d not in values]
    return widened
