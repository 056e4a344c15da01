"""First hop for a changed native_functions.yaml or derivatives.yaml entry. Pure.

The ATen op, resolved through the link graph (the entries dispatching to it, the Python
code calling it, the ops whose backward formulas call it). A change confined to another
device's or layout's dispatch keys affects nothing; a derivatives.yaml change only matters
when gradients are computed (kind `derivative`).
"""

from __future__ import annotations

from selection.links.base import Link, Outcome, Step, Target
from selection.links.index import LinkIndex
from selection.model import NativeChange


class NativeLinks:
    name = "native"

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, NativeChange):
            return Outcome()
        summary = f"{change.source}.yaml {change.op} {change.kind}"
        if change.fields:
            summary += ": " + ", ".join(change.fields[:4])
        if change.other_device_only:
            return Outcome(no_effect=f"{summary}: only another device's dispatch changed")
        path = f"{change.source}.yaml"
        how = ", ".join(change.fields[:4]) or str(change.kind)
        step = Step(path, change.op, how)
        kind = "derivative" if change.source == "derivatives" else "native"
        return Outcome(links=[Link(Target.aten(change.op), (step,))], kind=kind)
