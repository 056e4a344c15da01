"""The individual rules of the resolution (op, module, dtype scope; force_xfail).

Pure functions over a Manifest; `resolve.py` composes them. No I/O, no torch.
"""

from __future__ import annotations

from collections.abc import Callable

from test_manifests.decisions import Ctx, TestInstance
from test_manifests.matching import (
    PathRoots,
    entry_matches,
    file_matches,
    module_matches,
    op_matches,
)
from test_manifests.model import (
    COMPLEX_DTYPES,
    DtypeItem,
    DtypesEdits,
    FileEntry,
    Loc,
    Manifest,
    ModulesEdits,
    NamedItem,
    OpsEdits,
    SupportedModule,
    SupportedOp,
    TestEntry,
)


def matching_file(
    manifest: Manifest, file: str, roots: PathRoots | None = None
) -> tuple[int, FileEntry] | None:
    """The first file entry naming `file` (index, entry)."""

    def find() -> tuple[int, FileEntry] | None:
        for index, entry in enumerate(manifest.suite.files):
            if file_matches(entry, file, roots):
                return index, entry
        return None

    result: tuple[int, FileEntry] | None = manifest.memo(("file", file, roots), find)
    return result


def listed_entries(entry: FileEntry, class_name: str, template: str) -> list[tuple[int, TestEntry]]:
    """The tests[] entries (index, entry) whose names match the source method."""
    return [
        (i, test)
        for i, test in enumerate(entry.tests)
        if entry_matches(test, class_name, template) is not None
    ]


def listed_entries_in(
    manifest: Manifest, file_index: int, class_name: str, template: str
) -> list[tuple[int, TestEntry]]:
    """`listed_entries` of a manifest's file entry, cached per (file, class, template)."""
    entry = manifest.suite.files[file_index]
    result: list[tuple[int, TestEntry]] = manifest.memo(
        ("listed", file_index, class_name, template),
        lambda: listed_entries(entry, class_name, template),
    )
    return result


def find_op(manifest: Manifest, op: str, variant: str | None) -> tuple[int, SupportedOp] | None:
    """The first supported_ops entry naming the op (`div`) or this variant (`div.x`)."""

    def index() -> dict[str, tuple[int, SupportedOp]]:
        by_name: dict[str, tuple[int, SupportedOp]] = {}
        for i, item in enumerate(manifest.suite.global_.supported_ops or []):
            by_name.setdefault(item.name, (i, item))
        return by_name

    by_name: dict[str, tuple[int, SupportedOp]] = manifest.memo("ops", index)
    hits = [by_name[n] for n in {op, f"{op}.{variant}" if variant else op} if n in by_name]
    return min(hits, key=lambda hit: hit[0]) if hits else None


def find_module(manifest: Manifest, module: str) -> tuple[int, SupportedModule] | None:
    for i, item in enumerate(manifest.suite.global_.supported_modules or []):
        if module_matches(item.name, module):
            return i, item
    return None


def _edits_verdict(
    ctx: Ctx,
    aspect: str,
    label: str,
    edits: OpsEdits | ModulesEdits | DtypesEdits,
    matches: Callable[[str], bool],
    tloc: Loc,
) -> bool | None:
    """A test entry's `edits.<aspect>s.exclude` (first) or `.include`; None: neither names it."""
    for verdict, kind in ((False, "exclude"), (True, "include")):
        items: list[NamedItem | DtypeItem] = getattr(edits, kind)
        for i, item in enumerate(items):
            if matches(item.name):
                ctx.decide(
                    aspect,
                    f"{label} {'in' if verdict else 'out'}",
                    f"edits.{aspect}s.{kind}",
                    (*tloc, "edits", f"{aspect}s", kind, i),
                )
                return verdict
    return None


def _global_verdict(ctx: Ctx, aspect: str, label: str, listed: bool, found: int | None) -> bool:
    """`global.supported_<aspect>s`: absent means all; else in only if listed (`found`)."""
    key = f"supported_{aspect}s"
    if not listed:
        ctx.decide(aspect, f"{label} in", f"no global.{key} (all {aspect}s)", ("global",))
        return True
    if found is None:
        ctx.decide(aspect, f"{label} out", f"not in global.{key}", ("global", key))
        return False
    ctx.decide(aspect, f"{label} in", f"global.{key}", ("global", key, found))
    return True


def _op_in_scope(ctx: Ctx, test: TestEntry | None, tloc: Loc) -> bool:
    inst = ctx.instance
    op, variant, label = inst.op, inst.op_variant, inst.op_full_name
    if op is None or label is None:
        return True
    if test is not None:
        verdict = _edits_verdict(
            ctx, "op", label, test.edits.ops, lambda name: op_matches(name, op, variant), tloc
        )
        if verdict is not None:
            return verdict
    listed = ctx.manifest.suite.global_.supported_ops is not None
    found = find_op(ctx.manifest, op, variant) if listed else None
    return _global_verdict(ctx, "op", label, listed, found[0] if found else None)


def _module_in_scope(ctx: Ctx, test: TestEntry | None, tloc: Loc) -> bool:
    module = ctx.instance.module
    if module is None:
        return True
    if test is not None:
        verdict = _edits_verdict(
            ctx,
            "module",
            module,
            test.edits.modules,
            lambda name: module_matches(name, module),
            tloc,
        )
        if verdict is not None:
            return verdict
    listed = ctx.manifest.suite.global_.supported_modules is not None
    found = find_module(ctx.manifest, module) if listed else None
    return _global_verdict(ctx, "module", module, listed, found[0] if found else None)


def _names(items: list[DtypeItem]) -> frozenset[str]:
    return frozenset(item.name for item in items)


def base_dtypes(
    manifest: Manifest, instance: TestInstance
) -> tuple[frozenset[str] | None, str, Loc]:
    """global ∩ op (∩ module) ∩ upstream, before includes/excludes; None = unrestricted."""
    glob = manifest.suite.global_
    allowed: frozenset[str] | None = _names(glob.supported_dtypes) or None
    rule: str = "global.supported_dtypes" if allowed else "no dtype ceiling"
    loc: Loc = ("global", "supported_dtypes") if allowed else ("global",)
    op = find_op(manifest, instance.op, instance.op_variant) if instance.op else None
    if op is not None and op[1].dtypes:
        op_set = _names(op[1].dtypes)
        allowed = op_set if allowed is None else allowed & op_set
        rule, loc = "global.supported_ops[].dtypes", ("global", "supported_ops", op[0], "dtypes")
    module = find_module(manifest, instance.module) if instance.module else None
    if module is not None and module[1].dtypes:
        mod_set = _names(module[1].dtypes)
        allowed = mod_set if allowed is None else allowed & mod_set
        rule, loc = (
            "global.supported_modules[].dtypes",
            ("global", "supported_modules", module[0], "dtypes"),
        )
    if instance.upstream_dtypes is not None:
        allowed = (
            instance.upstream_dtypes if allowed is None else allowed & instance.upstream_dtypes
        )
    return allowed, rule, loc


def effective_dtypes(
    manifest: Manifest, instance: TestInstance, test: TestEntry | None
) -> frozenset[str] | None:
    """The dtypes this (template, op, module) runs with; None = unrestricted (minus complex)."""
    base, _, _ = base_dtypes(manifest, instance)
    if test is None:
        return base
    include = _names(test.edits.dtypes.include)
    exclude = frozenset(item.name for item in test.edits.dtypes.exclude)
    if base is None:
        return None
    return (base | include) - exclude


def _dtype_in_scope(ctx: Ctx, test: TestEntry | None, tloc: Loc) -> bool:
    dtype = ctx.instance.dtype
    if dtype is None:
        return True
    if test is not None:
        verdict = _edits_verdict(
            ctx, "dtype", dtype, test.edits.dtypes, lambda name: name == dtype, tloc
        )
        if verdict is not None:
            return verdict
    upstream = ctx.instance.upstream_dtypes
    if upstream is not None and dtype not in upstream:
        ctx.decide(
            "dtype",
            f"{dtype} out",
            "not generated upstream (include it to add it)",
            tloc or ("files",),
        )
        return False
    allowed, rule, loc = base_dtypes(ctx.manifest, ctx.instance)
    if allowed is None:
        if dtype in COMPLEX_DTYPES:
            ctx.decide(
                "dtype", f"{dtype} out", "complex is unsupported unless included", ("global",)
            )
            return False
        ctx.decide("dtype", f"{dtype} in", rule, loc)
        return True
    ctx.decide("dtype", f"{dtype} {'in' if dtype in allowed else 'out'}", rule, loc)
    return dtype in allowed


def _force_xfail(
    ctx: Ctx, test: TestEntry | None, tloc: Loc
) -> tuple[str, Loc, DtypeItem | SupportedOp | SupportedModule] | None:
    """The first force_xfail that applies to the instance."""
    inst, glob = ctx.instance, ctx.manifest.suite.global_
    if (
        inst.op is not None
        and (op := find_op(ctx.manifest, inst.op, inst.op_variant))
        and op[1].force_xfail
    ):
        return "global.supported_ops[].force_xfail", ("global", "supported_ops", op[0]), op[1]
    if (
        inst.module is not None
        and (mod := find_module(ctx.manifest, inst.module))
        and mod[1].force_xfail
    ):
        return (
            "global.supported_modules[].force_xfail",
            ("global", "supported_modules", mod[0]),
            mod[1],
        )
    if inst.dtype is None:
        return None
    if test is not None:
        for i, inc in enumerate(test.edits.dtypes.include):
            if inc.name == inst.dtype and inc.force_xfail:
                return (
                    "edits.dtypes.include[].force_xfail",
                    (*tloc, "edits", "dtypes", "include", i),
                    inc,
                )
    for i, item in enumerate(glob.supported_dtypes):
        if item.name == inst.dtype and item.force_xfail:
            return "global.supported_dtypes[].force_xfail", ("global", "supported_dtypes", i), item
    return None
