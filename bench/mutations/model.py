"""What the benchmark's parts hand each other: sites, truth specifications, mutations. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mutations.edits import Edit
from mutations.operators import Change

EXECUTION = "execution"  # run the pairs before and after: those whose digest changes
ENTRIES = "entries"  # every in-scope pair of these OpInfo/ModuleInfo entries
DECORATION = "decoration"  # the reused instances a DecorateInfo names
OPS = "ops"  # the in-scope pairs whose entry's own ATen op is one of these
NONE = "none"  # nothing here can be affected (another device's DecorateInfo)


@dataclass(frozen=True)
class TruthSpec:
    """How the ground truth of a mutation is had (see mutations.truth)."""

    mode: str
    entries: tuple[str, ...] = ()  # ENTRIES / DECORATION: op full names
    ops: tuple[str, ...] = ()  # OPS: ATen op base names
    backward_only: bool = False  # OPS: a derivative formula (matters under autograd)
    test_class: str | None = None  # DECORATION
    test_name: str | None = None
    dtypes: tuple[str, ...] | None = None
    why: str = ""  # why execution cannot tell, for the non-execution modes


@dataclass(frozen=True)
class Site:
    """A place to mutate: a function, an entry field, a YAML entry, a module statement."""

    kind: str  # the link kind it exercises (decomposition, meta, python-ref, ...)
    group: str  # a stratum inside the kind (registered, helper, inferred, docstring, ...)
    path: str  # the file, as the mirror (and the wheel) spells it
    symbol: str  # qualname, entry full name, YAML op, or "<module>"
    truth: TruthSpec
    changes: Callable[[], list[Change]] = field(compare=False, hash=False)
    expect: str = "select"  # select | nothing (behaviour-free, other-device-only)
    forced: bool = False  # always among the first picks of its kind


@dataclass(frozen=True)
class Mutation:
    id: str
    kind: str
    group: str
    path: str
    symbol: str
    operator: str
    description: str
    line: int
    edits: tuple[Edit, ...]
    truth: TruthSpec
    expect: str
    reached: bool | None  # the recorded map says an in-scope pair executed the symbol

    @property
    def function(self) -> tuple[str, str] | None:
        """(path, qualname) of the mutated function, for execution truth."""
        if self.truth.mode != EXECUTION or self.symbol == "<module>":
            return None
        return self.path, self.symbol

    def summary(self) -> str:
        return f"{self.path}::{self.symbol} line {self.line}: {self.description}"
