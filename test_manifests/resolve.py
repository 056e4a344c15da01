"""`resolve(manifest, instance) -> Resolution`: the pure decision for one test instance.

See docs/manifests.md ("Semantics") for the rules; each aspect of the result records the
rule, file and line that decided it. No I/O and no torch: the selection imports this.
"""

from __future__ import annotations

from collections.abc import Sequence

from test_manifests.decisions import (
    DEFAULT_TOLERANCE_RULE,
    Ctx,
    Resolution,
    TestInstance,
    mark_name,
)
from test_manifests.matching import PathRoots
from test_manifests.model import (
    DEFAULT_TOLERANCE,
    DtypeItem,
    Loc,
    Manifest,
    Mode,
    Precision,
    TestEntry,
)
from test_manifests.rules import (
    _dtype_in_scope,
    _force_xfail,
    _module_in_scope,
    _op_in_scope,
    effective_dtypes,
    find_module,
    find_op,
    listed_entries_in,
    matching_file,
)


def _not_reused(
    ctx: Ctx,
    rule: str,
    loc: Loc,
    why: tuple[str | None, str | None, str | None] = (None, None, None),
) -> Resolution:
    """Not generated; `why` is the (reason, issue, owner) of an explicit skip."""
    ctx.decide("mode", Mode.SKIP.value, rule, loc)
    return Resolution(
        instance=ctx.instance,
        reused=False,
        mode=Mode.SKIP,
        dtypes=None,
        tolerance=Precision(atol=DEFAULT_TOLERANCE, rtol=DEFAULT_TOLERANCE),
        marks=(),
        labels=(),
        reason=why[0],
        issue=why[1],
        owner=why[2],
        decisions=ctx.decisions,
    )


def _covering_entry(
    ctx: Ctx, file_index: int, entries: list[tuple[int, TestEntry]]
) -> tuple[TestEntry, Loc] | None:
    """The first listed entry whose op/module/dtype edits keep this instance."""
    for index, entry in entries:
        loc: Loc = ("files", file_index, "tests", index)
        if (
            _op_in_scope(ctx, entry, loc)
            and _module_in_scope(ctx, entry, loc)
            and _dtype_in_scope(ctx, entry, loc)
        ):
            return entry, loc
    return None


def _tolerance(ctx: Ctx, entry: TestEntry | None, tloc: Loc) -> Precision:
    """The first precision that names the instance's dtype, in precedence order."""
    inst, manifest = ctx.instance, ctx.manifest
    default = Precision(atol=DEFAULT_TOLERANCE, rtol=DEFAULT_TOLERANCE)
    if inst.dtype is None:
        ctx.decide("tolerance", "atol=0.001 rtol=0.001", DEFAULT_TOLERANCE_RULE, ())
        return default
    candidates: list[tuple[str, Loc, list[DtypeItem]]] = []
    if entry is not None:
        candidates.append(
            (
                "edits.dtypes.include[].precision",
                (*tloc, "edits", "dtypes", "include"),
                entry.edits.dtypes.include,
            )
        )
    if inst.op is not None and (op := find_op(manifest, inst.op, inst.op_variant)):
        candidates.append(
            (
                "global.supported_ops[].dtypes[].precision",
                ("global", "supported_ops", op[0], "dtypes"),
                op[1].dtypes,
            )
        )
    if inst.module is not None and (mod := find_module(manifest, inst.module)):
        candidates.append(
            (
                "global.supported_modules[].dtypes[].precision",
                ("global", "supported_modules", mod[0], "dtypes"),
                mod[1].dtypes,
            )
        )
    candidates.append(
        (
            "global.supported_dtypes[].precision",
            ("global", "supported_dtypes"),
            manifest.suite.global_.supported_dtypes,
        )
    )
    for rule, loc, items in candidates:
        for i, item in enumerate(items):
            if item.name == inst.dtype and item.precision is not None:
                tol = Precision(
                    atol=item.precision.atol
                    if item.precision.atol is not None
                    else DEFAULT_TOLERANCE,
                    rtol=item.precision.rtol
                    if item.precision.rtol is not None
                    else DEFAULT_TOLERANCE,
                )
                ctx.decide(
                    "tolerance", f"atol={tol.atol} rtol={tol.rtol}", rule, (*loc, i, "precision")
                )
                return tol
    ctx.decide("tolerance", "atol=0.001 rtol=0.001", DEFAULT_TOLERANCE_RULE, ())
    return default


def _marks(inst: TestInstance, entries: Sequence[TestEntry]) -> tuple[str, ...]:
    marks: list[str] = []
    for entry in entries:
        marks.extend(entry.tags)
    if inst.op is not None:
        marks.append(mark_name("op", inst.op_full_name or inst.op))
    if inst.dtype is not None:
        marks.append(mark_name("dtype", inst.dtype))
    if inst.module is not None:
        marks.append(mark_name("module", inst.module.removeprefix("torch.")))
    return tuple(dict.fromkeys(marks))


def resolve(
    manifest: Manifest, instance: TestInstance, roots: PathRoots | None = None
) -> Resolution:
    """Resolve one test instance against one manifest."""
    ctx = Ctx(manifest, instance)
    found = matching_file(manifest, instance.file, roots)
    if found is None:
        return _not_reused(ctx, "no files[] entry names this file", ())
    file_index, file_entry = found
    floc: Loc = ("files", file_index)
    ctx.decide("file", file_entry.path, "files[].path", (*floc, "path"))
    listed = listed_entries_in(manifest, file_index, instance.class_name, instance.template)
    if listed:
        covering = _covering_entry(ctx, file_index, listed)
        if covering is None:
            return _not_reused(
                ctx,
                "listed, but its op/module/dtype is filtered out",
                (*floc, "tests", listed[0][0]),
            )
        entry, tloc = covering
        ctx.decide("entry", ", ".join(entry.names), "tests[].names", (*tloc, "names"))
        if entry.mode_is_explicit:
            mode, rule, mloc = entry.mode, "tests[].mode", (*tloc, "mode")
        else:
            mode, rule, mloc = Mode.MANDATORY_SUCCESS, "listed without mode", (*tloc, "names")
        tracked = entry
    else:
        entry, tloc = None, floc
        if not (
            _op_in_scope(ctx, None, floc)
            and _module_in_scope(ctx, None, floc)
            and _dtype_in_scope(ctx, None, floc)
        ):
            return _not_reused(
                ctx, "unlisted, and its op/module/dtype is filtered out", (*floc, "path")
            )
        mode, rule, mloc = (
            file_entry.unlisted_test_mode,
            "files[].unlisted_test_mode",
            (*floc, "unlisted_test_mode"),
        )
        if "unlisted_test_mode" not in file_entry.model_fields_set:
            rule, mloc = "unlisted_test_mode default (skip)", (*floc, "path")
        tracked = file_entry  # type: ignore[assignment]
    reason, issue, owner = tracked.reason, tracked.issue, tracked.owner
    forced = _force_xfail(ctx, entry, tloc)
    if forced is not None and mode is Mode.MANDATORY_SUCCESS:
        rule, mloc, item = forced
        mode = Mode.XFAIL
        reason, issue = item.reason or reason, item.issue or issue
    ctx.decide("mode", mode.value, rule, mloc)
    if mode is Mode.SKIP:
        return _not_reused(ctx, rule, mloc, (reason, issue, owner))
    covering_entries = [entry] if entry is not None else []
    labels = tuple(
        dict.fromkeys(
            [*manifest.suite.labels, *file_entry.labels, *(entry.labels if entry else [])]
        )
    )
    return Resolution(
        instance=instance,
        reused=True,
        mode=mode,
        dtypes=effective_dtypes(manifest, instance, entry),
        tolerance=_tolerance(ctx, entry, tloc),
        marks=_marks(instance, covering_entries),
        labels=labels,
        no_grad=entry.no_grad if entry else False,
        cpu_move=tuple(f.name for f in entry.edits.functions.cpu_move) if entry else (),
        reason=reason,
        issue=issue,
        owner=owner or file_entry.owner or manifest.suite.owner,
        decisions=ctx.decisions,
    )
