"""First hop for a changed OpInfo / ModuleInfo entry. Pure.

Every generated instance of the op (and of the PythonRefInfos that inherit its arguments),
or, when every relevant change is a DecorateInfo aimed at a test class (or a `dtypes` list
compared as sets), only the instances it names. Changes aimed at another device (for a
PrivateUse1 test: CUDA, ROCm, MPS, XPU, and also cpu and meta) affect nothing; a removed
entry is a manifest finding, not a test to run.
"""

from __future__ import annotations

from selection.links.base import Link, Outcome, Step, Target
from selection.links.index import LinkIndex
from selection.model import ChangeKind, EntryChange, FieldChange, TestInstance
from selection.opinfo_db import DECORATION_FIELDS


def _targeted(change: FieldChange) -> bool:
    """A field change that names the instances it affects: a DecorateInfo aimed at a test
    class, or a dtype list compared as sets (its added dtypes)."""
    if change.field == "dtypes":
        return change.dtypes is not None
    return change.field in DECORATION_FIELDS and bool(change.test_class)


def aimed_at(change: FieldChange, inst: TestInstance) -> bool:
    if change.field == "dtypes":
        return inst.dtype in (change.dtypes or ())
    if change.test_class and change.test_class != inst.test_class:
        return False
    if change.test_name and change.test_name != inst.template:
        return False
    return not (change.dtypes and inst.dtype and inst.dtype not in change.dtypes)


class EntryLinks:
    name = "entry"

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, EntryChange) or change.kind == ChangeKind.removed:
            return Outcome()
        label = "ModuleInfo" if change.database == "moduleinfo" else "OpInfo"
        summary = f"{label} {change.full_name!r} {change.kind}"
        if change.other_device_only:
            details = "; ".join(f.detail for f in change.fields[:3])
            return Outcome(
                no_effect=f"{summary}: only other-device skips/decorators/dtypes ({details})"
            )
        relevant = [f for f in change.fields if not f.other_device_only]
        detail = "; ".join(f.detail for f in relevant[:3]) + ("…" if len(relevant) > 3 else "")
        step = Step(change.path, f"{label}({change.full_name!r})", detail or str(change.kind))
        target = Target.entry(change.database, change.name, change.variant)
        if not (relevant and all(_targeted(f) for f in relevant)):
            return Outcome(links=[Link(target, (step,))], kind="entry")
        instances = [
            i
            for i in index.by_op().get(change.full_name, [])
            if i.database == change.database and any(aimed_at(f, i) for f in relevant)
        ]
        if not instances:
            return Outcome(no_effect=f"{summary}: {detail}: names no instance that exists here")
        kinds = {"dtypes" if f.field == "dtypes" else "decoration" for f in relevant}
        kind = "entry-decoration" if kinds == {"decoration"} else "entry-dtypes"
        named = Target.instances(summary, tuple(i.node_id for i in instances))
        return Outcome(links=[Link(named, (step,))], kind=kind)
