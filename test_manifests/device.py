"""The device test base that applies a manifest while upstream generates its tests.

`manifest_test_base(manifest, roots)` returns a subclass of torch_spyre_ref's
`SpyreTestBase` (a `PrivateUse1TestBase`) whose `instantiate_test`:
- narrows `@ops` / `@modules` lists to the ops/modules in scope and injects included ones,
- generates included dtypes upstream would not generate,
- lets upstream generate the variants, then deletes every variant the manifest does not
  run (so skipped variants are never collected) and records the resolution of the others,
- applies tolerance overrides, `no_grad` and `functions.cpu_move` when a variant runs.
Marks and xfail are added by the pytest plugin from the recorded resolution.

Imports torch: only the runner imports this module.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import torch

# Registered before common_device_type is imported: its NATIVE_DEVICES then names spyre.
import torch_spyre_ref  # noqa: F401

# isort: split
from torch.testing._internal import common_device_type as cdt

from test_manifests.decisions import Resolution, TestInstance
from test_manifests.matching import PathRoots
from test_manifests.model import DEFAULT_TOLERANCE, Manifest
from test_manifests.resolve import resolve

RESOLUTION_ATTR = "_spyre_manifest_resolution"


def dtype_name(dtype: object) -> str | None:
    return str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else None


def source_file(cls: type) -> str:
    """The file that defines a test class (absolute), or its module name."""
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    return str(Path(file).resolve()) if file else cls.__module__


def instance_for(
    file: str, class_name: str, template: str, param_kwargs: dict[str, Any]
) -> TestInstance:
    """The TestInstance of one generated variant, from its parameters."""
    op = param_kwargs.get("op")
    module_info = param_kwargs.get("module_info")
    return TestInstance(
        file=file,
        class_name=class_name,
        template=template,
        op=getattr(op, "name", None),
        op_variant=getattr(op, "variant_test_name", None) or None,
        dtype=dtype_name(param_kwargs.get("dtype")),
        module=getattr(module_info, "name", None),
    )


def _cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu(v) for v in value)
    return value


@contextlib.contextmanager
def _cpu_moved(test_case: Any, names: tuple[str, ...]) -> Iterator[None]:
    """Within the test, `names` (e.g. assertEqual) receive their tensors on CPU."""
    for name in names:
        original = getattr(test_case, name)

        def moved(*args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            return _original(*_cpu(args), **{k: _cpu(v) for k, v in kwargs.items()})

        setattr(test_case, name, moved)
    try:
        yield
    finally:
        for name in names:
            with contextlib.suppress(AttributeError):
                delattr(test_case, name)


def _applied(
    fn: Callable[..., Any], resolution: Resolution, seed: int | None
) -> Callable[..., Any]:
    """The variant, seeded (input_config.seed) and run under no_grad / cpu_move if asked."""
    if not resolution.no_grad and not resolution.cpu_move and seed is None:
        setattr(fn, RESOLUTION_ATTR, resolution)
        return fn

    @functools.wraps(fn)
    def manifest_variant(self: Any) -> Any:
        if seed is not None:
            torch.manual_seed(seed)
        with contextlib.ExitStack() as stack:
            if resolution.no_grad:
                stack.enter_context(torch.no_grad())
            stack.enter_context(_cpu_moved(self, resolution.cpu_move))
            return fn(self)

    setattr(manifest_variant, RESOLUTION_ATTR, resolution)
    return manifest_variant


def _device_base() -> type:
    from torch_spyre_ref.testing import SpyreTestBase

    return SpyreTestBase


def manifest_test_base(manifest: Manifest, roots: PathRoots) -> type:
    """A SpyreTestBase subclass applying `manifest`."""
    base = _device_base()

    class ManifestTestBase(base):  # type: ignore[valid-type, misc]
        spyre_manifest: ClassVar[Manifest] = manifest
        spyre_roots: ClassVar[PathRoots] = roots

        @classmethod
        def instantiate_test(cls, name: str, test: Any, *, generic_cls: Any = None) -> None:
            # Imported here: as a TORCH_TEST_DEVICES module this base is defined while
            # common_device_type is still being imported (see torch_test_devices.py).
            from test_manifests.parametrizers import narrowed_parametrizers

            generic = generic_cls if generic_cls is not None else cls
            file, class_name = source_file(generic), generic.__name__
            before = set(cls.__dict__)
            with narrowed_parametrizers(test, manifest, roots, file, class_name, name):
                super().instantiate_test(name, test, generic_cls=generic_cls)
            for test_name in sorted(set(cls.__dict__) - before):
                cls._apply_manifest(test_name, file, class_name, name)

        @classmethod
        def _apply_manifest(cls, test_name: str, file: str, class_name: str, template: str) -> None:
            fn = cls.__dict__[test_name]
            param_kwargs: dict[str, Any] = (fn.__defaults__ or ({},))[0]
            instance = instance_for(file, class_name, template, param_kwargs)
            resolution = resolve(manifest, instance, roots)
            if not resolution.runs:
                delattr(cls, test_name)
                return
            setattr(
                cls, test_name, _applied(fn, resolution, manifest.suite.global_.input_config.seed)
            )

        def _apply_precision_override_for_test(self, test: Any, param_kwargs: Any) -> None:
            super()._apply_precision_override_for_test(test, param_kwargs)
            method = getattr(type(self), self._testMethodName, None)
            resolution: Resolution | None = getattr(method, RESOLUTION_ATTR, None)
            if resolution is None or resolution.instance.dtype is None:
                return
            atol = resolution.tolerance.atol or DEFAULT_TOLERANCE
            rtol = resolution.tolerance.rtol or DEFAULT_TOLERANCE
            if not resolution.tolerance_overrides_upstream:
                # The defaults only loosen: an upstream precisionOverride stays.
                case: Any = self
                current: tuple[float, float] = (case.precision, case.rel_tol)
                atol, rtol = max(current[0], atol), max(current[1], rtol)
            self.precision, self.rel_tol = atol, rtol

    ManifestTestBase.__name__ = ManifestTestBase.__qualname__ = f"Manifest{base.__name__}"
    return ManifestTestBase


def install(test_base: type) -> Callable[[], None]:
    """Make `test_base` the only privateuse1 test base; returns the undo function."""
    saved = list(cdt.device_type_test_bases)
    kept = [b for b in saved if getattr(b, "device_type", None) not in ("privateuse1", "spyre")]
    cdt.device_type_test_bases[:] = [*kept, test_base]

    def undo() -> None:
        cdt.device_type_test_bases[:] = saved

    return undo
