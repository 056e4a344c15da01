"""First hop for a changed Python symbol (library, testing infrastructure, test helpers). Pure.

- Code only another device runs, `__all__`, `torch/version.py`: no effect, with the reason.
- A symbol of the instantiation machinery (what `instantiate_device_type_tests`, the device
  test bases, `@ops` and `TestCase` reach): a stratified canary.
- Module-level statements: run at import, so they can affect whatever imports the module: a
  canary aimed at the tests that reach the module (database files, test files and the
  machinery: every reused test).
- Any other changed or removed symbol: the function itself, resolved through the link graph
  (callers, entries, registrations, ...). A library symbol no reused test reaches is a blind
  spot covered by a canary aimed at what reaches its module (the stratified canary when
  nothing does); a testing helper no reused test reaches affects nothing.
- An added symbol (or module) is reached only by code that changed to use it, and a removed
  one only by code that changed to stop using it: both are mapped on their own.
"""

from __future__ import annotations

from collections import deque

from selection.links.base import Link, Outcome, Step, Target
from selection.links.index import LinkIndex
from selection.links.subsystems import is_other_device_package, subsystem_of
from selection.model import ChangeKind, SymbolChange
from selection.pyast import MODULE_SYMBOL
from selection.upstream import INTERNAL, is_database_file

MACHINERY_FILES = (
    f"{INTERNAL}/common_device_type.py",
    f"{INTERNAL}/common_utils.py",
    f"{INTERNAL}/opinfo/core.py",
)
MACHINERY_ROOTS = (
    "instantiate_device_type_tests",
    "DeviceTypeTestBase",
    "PrivateUse1TestBase",
    "ops",
    "dtypes",
    "_TestParametrizer",
    "TestCase",
    "OpInfo",
    "DecorateInfo",
    "SampleInput",
    "run_tests",
)
BEHAVIOUR_FREE_SYMBOLS = {"__all__": "__all__ only lists the module's exports"}
BEHAVIOUR_FREE_FILES = {"torch/version.py": "version metadata (__version__, git_version)"}


def is_test_path(path: str) -> bool:
    return path.startswith(("test/", "torch/testing/"))


def machinery(index: LinkIndex) -> set[Target]:
    """Symbols of the machinery files reachable from the machinery roots."""

    def build() -> set[Target]:
        graph = index.graph
        start = [Target.function(p, n) for p in MACHINERY_FILES for n in MACHINERY_ROOTS]
        seen: set[Target] = set()
        queue = deque(t for t in start if t in graph or _defined(index, t))
        while queue:
            node = queue.popleft()
            if node in seen:
                continue
            seen.add(node)
            for edge in graph.uses.get(node, ()):
                if edge.used.kind == "function" and edge.used.path in MACHINERY_FILES:
                    queue.append(edge.used)
            if "." not in node.name:  # a class: its methods run too
                queue.extend(index.explorer.methods_of(node))
        return seen

    return index.memo("symbol_changes.machinery", build)


def _defined(index: LinkIndex, target: Target) -> bool:
    summary = index.explorer.summary(target.path)
    return summary is not None and target.name in summary.kinds


def module_reach(index: LinkIndex, path: str) -> list[Link]:
    """Links to every symbol of a module that the graph knows (what reaches the module)."""
    summary = index.explorer.summaries.get(path)
    if summary is None:
        return []
    graph = index.graph
    return [
        Link(Target.function(path, q), (Step(path, q, "is defined in the changed module"),))
        for q in summary.kinds
        if q != MODULE_SYMBOL and Target.function(path, q) in graph
    ]


def subsystem_outcome(subsystem: str, label: str, index: LinkIndex) -> Outcome:
    """A change inside a package summarized as one node: a canary aimed at the tests that
    reach the package; nothing, when no reused test reaches it."""
    target = Target("subsystem", subsystem)
    if target not in index.graph:
        return Outcome(no_effect=f"{label}: no reused test reaches {subsystem}")
    step = Step(subsystem, "", "changed inside the package (summarized as one node)")
    return Outcome(
        links=[Link(target, (step,))],
        canary=f"{label}: inside {subsystem}, reached as a whole",
        kind="subsystem",
    )


class SymbolLinks:
    name = "symbol"

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, SymbolChange):
            return Outcome()
        label = f"{change.path}: {change.qualname} {change.kind}"
        quiet = self._no_effect(change)
        if quiet:
            return Outcome(no_effect=f"{label}: {quiet}")
        subsystem = subsystem_of(change.path)
        if subsystem is not None:
            return subsystem_outcome(subsystem, label, index)
        test_code = is_test_path(change.path)
        kind = "helper" if test_code else "library"
        target = Target.function(change.path, change.qualname)
        if target in machinery(index) or (
            change.path in MACHINERY_FILES and change.qualname == MODULE_SYMBOL
        ):
            return Outcome(
                canary=f"{label}: instantiation machinery, reached by nearly every instance",
                kind="canary",
            )
        if change.kind == ChangeKind.added:
            return Outcome(no_effect=f"{label}: new (its users changed too, and are mapped)")
        if change.kind == ChangeKind.removed:
            return Outcome(
                no_effect=f"{label}: removed (its former users changed too, and are mapped)"
            )
        if change.qualname == MODULE_SYMBOL:
            return self._module_level(change, label, index, test_code)
        if target in index.graph:
            step = Step(change.path, change.qualname, f"{change.kind}")
            return Outcome(links=[Link(target, (step,))], kind=kind)
        if test_code:
            return Outcome(no_effect=f"{label}: no reused instance reaches it")
        aimed = module_reach(index, change.path)
        blind = f"{label}: linked to no reused test statically"
        return Outcome(links=aimed, canary=blind, blind_spots=[blind], kind="canary")

    def _no_effect(self, change: SymbolChange) -> str:
        if change.other_device_only:
            return "only another device's code changed"
        if change.path in BEHAVIOUR_FREE_FILES:
            return BEHAVIOUR_FREE_FILES[change.path]
        if change.qualname in BEHAVIOUR_FREE_SYMBOLS:
            return BEHAVIOUR_FREE_SYMBOLS[change.qualname]
        if is_other_device_package(change.path):
            return "another device's package"
        return ""

    def _module_level(
        self, change: SymbolChange, label: str, index: LinkIndex, test_code: bool
    ) -> Outcome:
        if is_database_file(change.path) or change.path.startswith("test/"):
            return Outcome(canary=f"{label}: module-level statements", kind="canary")
        aimed = module_reach(index, change.path)
        if aimed:
            return Outcome(
                links=aimed,
                canary=f"{label}: module-level statements run when the module is imported",
                kind="canary",
            )
        if test_code:
            return Outcome(
                no_effect=f"{label}: module-level statements of a file no reused test imports"
            )
        blind = f"{label}: module-level statements of a module no reused test reaches statically"
        return Outcome(canary=blind, blind_spots=[blind], kind="canary")
