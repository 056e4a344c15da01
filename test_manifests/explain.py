"""`spyre-ci manifest explain TEST_ID`: turn a pytest node id into a TestInstance and explain it.

`test/test_ops.py::TestCommonSPYRE::test_compare_cpu_add_spyre_float16` ->
file `test/test_ops.py`, class `TestCommon`, template `test_compare_cpu`, op `add`,
dtype `float16`. The template is the longest source method (from the upstream file, read
with `ast`, or from the manifest's names) that prefixes the variant name; the op is
recognised by its formatted name (`linalg.norm` -> `linalg_norm`). No torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from test_manifests.decisions import Resolution, TestInstance
from test_manifests.matching import DEVICE_SUFFIXES, PathRoots
from test_manifests.model import CANONICAL_DTYPES, Manifest
from test_manifests.resolve import resolve

_CLASS_SUFFIX = re.compile(r"(SPYRE|PRIVATEUSE1|CPU|CUDA|META|MPS|XPU)$")
_DEVICE = re.compile(
    r"^(?P<rest>.+)_(?:" + "|".join(DEVICE_SUFFIXES) + r")(?:_(?P<dtype>[a-z0-9_]+))?$"
)


class BadTestId(ValueError):
    """The test id is not `file::Class::method`."""


def _formatted(op: str) -> str:
    return op.replace(".", "_")


def _templates_from_manifest(manifest: Manifest, class_name: str) -> set[str]:
    names: set[str] = set()
    for entry in manifest.suite.files:
        for test in entry.tests:
            for name in test.names:
                cls, _, method = name.rpartition("::")
                if (not cls or cls == class_name) and re.fullmatch(r"\w+", method):
                    names.add(method)
    return names


def _op_names(manifest: Manifest, extra: Iterable[str]) -> list[str]:
    names = {op.name for op in manifest.suite.global_.supported_ops or []}
    for entry in manifest.suite.files:
        for test in entry.tests:
            names |= {item.name for item in test.edits.ops.include}
    return sorted(names | set(extra), key=len, reverse=True)


def parse_test_id(
    test_id: str, manifest: Manifest, templates: Iterable[str] = (), ops: Iterable[str] = ()
) -> TestInstance:
    """The TestInstance a generated test id stands for."""
    parts = test_id.split("::")
    if len(parts) != 3:
        raise BadTestId(f"{test_id!r}: expected file::Class::method")
    file, device_class, method = parts
    class_name = _CLASS_SUFFIX.sub("", device_class)
    dtype, rest = None, method
    if (m := _DEVICE.match(method)) is not None:
        rest = m["rest"]
        dtype = m["dtype"] if m["dtype"] in CANONICAL_DTYPES else None
    known = set(templates) | _templates_from_manifest(manifest, class_name)
    template = max(
        (t for t in known if rest == t or rest.startswith(f"{t}_")), key=len, default=rest
    )
    suffix = rest[len(template) + 1 :]
    op = variant = None
    if suffix:
        for name in _op_names(manifest, ops):
            base = _formatted(name)
            if suffix == base or suffix.startswith(f"{base}_"):
                op, variant = name, suffix[len(base) + 1 :] or None
                break
        else:
            op = suffix
    return TestInstance(
        file=file, class_name=class_name, template=template, op=op, op_variant=variant, dtype=dtype
    )


def source_templates(roots: PathRoots, file: str, class_name: str) -> set[str]:
    """Test methods of `class_name` in the upstream file, when the source tree is given."""
    from test_manifests.lint import UpstreamIndex

    path = Path(file) if Path(file).is_absolute() else Path(roots.torch_root or ".") / file
    if not path.is_file():
        return set()
    index = UpstreamIndex.from_files([path])
    return set().union(*(m for c, m in index.classes[str(path)].items() if c == class_name))


def explain(
    manifest: Manifest, test_id: str, roots: PathRoots | None = None
) -> tuple[TestInstance, Resolution]:
    roots = roots or PathRoots()
    file = test_id.split("::", 1)[0]
    class_name = _CLASS_SUFFIX.sub("", test_id.split("::")[1]) if "::" in test_id else ""
    instance = parse_test_id(test_id, manifest, source_templates(roots, file, class_name))
    return instance, resolve(manifest, instance, roots)


def render(instance: TestInstance, resolution: Resolution) -> str:
    lines = [
        f"test:      {instance.file}::{instance.class_name}::{instance.template}"
        + (f"  op={instance.op_full_name}" if instance.op else "")
        + (f"  dtype={instance.dtype}" if instance.dtype else "")
        + (f"  module={instance.module}" if instance.module else ""),
        f"runs:      {'yes' if resolution.runs else 'no (never collected)'}",
        f"mode:      {resolution.mode.value}",
        f"dtypes:    {', '.join(sorted(resolution.dtypes)) if resolution.dtypes else 'unrestricted'}",
        f"tolerance: atol={resolution.tolerance.atol} rtol={resolution.tolerance.rtol}",
        f"marks:     {', '.join((*resolution.marks, *resolution.labels)) or '-'}",
    ]
    if resolution.reason or resolution.issue:
        lines.append(f"reason:    {resolution.reason or ''} {resolution.issue or ''}".rstrip())
    lines.append("decided by:")
    lines += [f"  {aspect:<9} {decision}" for aspect, decision in resolution.decisions.items()]
    return "\n".join(lines)
