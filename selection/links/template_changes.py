"""First hop for a changed test template (`test*` method of a reused test file). Pure.

All its instances; nothing when only another device's code changed or when the manifests
do not reuse it (or it is not instantiated for this device); a removed template the
manifests still name is a manifest finding.
"""

from __future__ import annotations

from selection.links.base import Link, Outcome, Step, Target
from selection.links.index import LinkIndex
from selection.model import ChangeKind, SymbolChange


class TemplateLinks:
    name = "template"

    def __init__(self, templates: list[SymbolChange]) -> None:
        self.templates = set(templates)

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, SymbolChange) or change not in self.templates:
            return Outcome()
        label = f"{change.path}: {change.qualname} {change.kind}"
        if change.other_device_only:
            return Outcome(no_effect=f"{label}: only another device's code changed")
        if change.kind == ChangeKind.removed:
            return Outcome(no_effect=f"{label}: removed upstream")
        cls_name, _, method = change.qualname.partition(".")
        if not index.by_template().get((change.path, cls_name, method)):
            return Outcome(
                no_effect=f"{label}: not a template of a file the manifests reuse, "
                "or not instantiated for this device"
            )
        target = Target.template(change.path, cls_name, method)
        step = Step(change.path, change.qualname, "the template's body changed")
        return Outcome(links=[Link(target, (step,))], kind="template")
