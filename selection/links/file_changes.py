"""First hop for a changed file, when nothing finer was found in it. Pure.

A file analysed symbol by symbol (or entry by entry) whose every change is behaviour-free
(comments, docstrings, annotations, formatting, import order) affects nothing. Of the
rest: a file of another device's package with nothing finer (an added or removed file:
what uses it changed too), documentation and CI configuration affect nothing; a
package summarized as one node reaches what reaches it (a canary aimed at those tests);
C++ and other sources the analysis cannot read are blind spots covered by the stratified
canary.
"""

from __future__ import annotations

from selection.links.base import Outcome
from selection.links.index import LinkIndex
from selection.links.subsystems import is_other_device_package, subsystem_of
from selection.links.symbol_changes import BEHAVIOUR_FREE_FILES, subsystem_outcome
from selection.model import FileChange

NOT_CODE_PREFIXES = (".github/", ".ci/", ".circleci/", "docs/", "benchmarks/", "scripts/")
NOT_CODE_SUFFIXES = (".md", ".rst", ".txt", ".pyi", ".typed")
BEHAVIOUR_FREE = (
    "no behaviour change (comments, docstrings, annotations, formatting, import order, or a "
    "literal spelt another way with the same value)"
)


def is_not_code(path: str) -> bool:
    """Documentation, type stubs or CI configuration: nothing a test runs."""
    return path.startswith(NOT_CODE_PREFIXES) or path.endswith(NOT_CODE_SUFFIXES)


class FileLinks:
    name = "file"

    def __init__(self, with_changes: set[str]) -> None:
        self.with_changes = with_changes  # paths whose finer changes were mapped on their own

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, FileChange) or change.parse_error:
            return Outcome()
        path = change.path
        label = f"{path} {change.kind}"
        if path in self.with_changes:
            return Outcome()
        if path in BEHAVIOUR_FREE_FILES:
            return Outcome(no_effect=f"{label}: {BEHAVIOUR_FREE_FILES[path]}")
        if change.analysed:
            return Outcome(no_effect=f"{label}: {BEHAVIOUR_FREE}")
        if is_other_device_package(path):
            return Outcome(no_effect=f"{label}: another device's package")
        if is_not_code(path):
            return Outcome(no_effect=f"{label}: documentation, type stubs or CI configuration")
        subsystem = subsystem_of(path)
        if subsystem is not None:
            return subsystem_outcome(subsystem, label, index)
        blind = f"{label}: not analysed (no link can be made from this kind of file)"
        return Outcome(canary=blind, blind_spots=[blind], kind="canary")
