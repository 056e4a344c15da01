"""The link contract: targets, evidence, links, outcomes, and the protocol every kind follows. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from selection.links.index import LinkIndex


@dataclass(frozen=True)
class Target:
    """Something a change reaches; equal targets are one node of the link graph."""

    kind: str  # aten | function | entry | template | subsystem | instances
    name: str  # "add.Tensor" | "gelu" | "add" | "test_out" | "torch/_dynamo" | a label
    path: str = ""  # function: file; template: test file
    scope: str = ""  # entry: database ("opinfo" | "moduleinfo" | "foreach"); template: class
    variant: str = ""  # entry: variant_test_name
    node_ids: tuple[str, ...] = ()  # instances: the node ids

    @staticmethod
    def aten(name: str) -> Target:
        """`add.Tensor`, `add.out`, or `add` (the default overload: any overload of add)."""
        name = name.removeprefix("aten::").removeprefix("aten.")
        return Target("aten", name.removesuffix(".default"))

    @staticmethod
    def function(path: str, qualname: str) -> Target:
        return Target("function", qualname, path=path)

    @staticmethod
    def entry(database: str, name: str, variant: str = "") -> Target:
        return Target("entry", name, scope=database, variant=variant)

    @staticmethod
    def template(path: str, test_class: str, method: str) -> Target:
        return Target("template", method, path=path, scope=test_class)

    @staticmethod
    def instances(label: str, node_ids: tuple[str, ...]) -> Target:
        return Target("instances", label, node_ids=node_ids)

    @property
    def aten_base(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def full_name(self) -> str:
        """entry: `name.variant`; function: `path::qualname`; aten: `aten::name`."""
        if self.kind == "entry":
            return f"{self.name}.{self.variant}" if self.variant else self.name
        if self.kind == "function":
            return f"{self.path}::{self.name}"
        if self.kind == "aten":
            return f"aten::{self.name}"
        if self.kind == "template":
            return f"{self.path}::{self.scope}.{self.name}"
        return self.name


@dataclass(frozen=True)
class Step:
    """One hop of evidence: where (file, symbol) and what makes the link there."""

    path: str
    symbol: str
    how: str  # "@register_decomposition(aten.gelu_backward) (line 253)", "calls F.gelu", ...
    # A call's argument count, receiver included (`grad.slice(dim, start)`: 3), where every
    # call the hop stands for is known to pass at least that many: a changed schema default
    # past them does not reach through this hop. None: not known.
    arguments: int | None = None
    # Where `arguments` is not known (a release's compiled call holds every argument): what
    # an older release's C++ source passes at every call of this hop, as recorded
    # (selection.cpp.recorded_arguments). A changed default past it is a doubt, not a use:
    # the walk does not follow the hop, a canary runs the tests nearest the caller.
    older_arguments: int | None = None
    # The use constructs or calls a class, so that its methods may run on the instance: the
    # edges into the class and into each of those methods carry it (calls.uses_of).
    constructs: bool = False
    # How the one Python use the step was read from runs the target (selection.python.
    # summary.Use): whether it calls it there (a call or a decorator; not a function passed
    # or stored), inside how many function bodies nested in the user's own (0: whenever the
    # user runs), and whether what the call returns is called there too. A graph edge keeps
    # its first use's; what `import torch` runs is read use by use
    # (Explorer.function_uses, selection.links.startup).
    called: bool = False
    nesting: int = 0
    applied: bool = False

    def __str__(self) -> str:
        where = f"{self.path}:{self.symbol}" if self.symbol else self.path
        return f"{where} {self.how}".strip()


def fewest_arguments(first: int | None, second: int | None) -> int | None:
    """What two calls that one hop stands for pass at least: the fewer, unknown if either is."""
    return None if first is None or second is None else min(first, second)


@dataclass(frozen=True)
class Link:
    """A changed item reaches `target`; `evidence` is the chain of hops, first to last."""

    target: Target
    evidence: tuple[Step, ...] = ()
    basis: str = "static"  # static | observed
    kinds: tuple[str, ...] = ()  # the graph edges followed, first to last (call, dispatch, ...)
    # What a recorded map is asked about instead of a function target: the functions nested
    # in it that an edit was confined to (`f.<locals>.g`); empty: the target itself.
    observed_as: tuple[str, ...] = ()
    # The change runs only where a test traces its op (a Meta kernel): only those instances.
    traced_only: bool = False
    # The change matters only at call sites that omit an argument (a schema default): the
    # recording, which sees what ran and not how it was called, cannot narrow it.
    by_call_site: bool = False
    # ... the argument at this position (0-based): a call known to pass it is not a use.
    default_from: int | None = None
    # (user, used) edges whose every call passes values the change leaves alone
    # (selection.links.argument_reach): not followed (with `by_call_site`).
    passed_over: frozenset[tuple[Target, Target]] = frozenset()
    # The changed function the target runs the change through (a caller passing it a value
    # the change matters for): the recording counts only pairs that ran both (each in any
    # path).
    ran_with: Target | None = None


@dataclass
class Outcome:
    """What one change reaches, as a link kind decides it.

    - `links` and no `canary`: every test the links reach runs (resolved through the graph);
    - `canary`: a stratified canary, aimed at what `links` reach (all reused tests without);
    - `no_effect`: nothing here can be affected, and why;
    - `blind_spots`: what the analysis could not link (listed by name in the report);
    - `unrecorded_blind`: linked only by the recording, so a blind spot and a canary (aimed
      at what `canary_aim` reaches) for the reused instances the recording does not cover
      (pairs without a recording, templates without an (op, dtype)), when there are any.
    - `beside`: a canary aimed at what `canary_aim` reaches, beside what the links reach,
      whatever the recording covers (code it never runs, such as a template's body, calls
      into what changed: a subsystem).
    - `load_time`: the changed code also runs while `import torch` runs
      (selection.links.startup), before every test: the stratified canary over every reused
      test, beside what the links reach.
    """

    links: list[Link] = field(default_factory=list)
    no_effect: str = ""
    canary: str = ""
    blind_spots: list[str] = field(default_factory=list)
    kind: str = ""  # the map cause's kind: template, entry, call, native, derivative, ...
    unrecorded_blind: str = ""
    canary_aim: list[Link] = field(default_factory=list)
    beside: str = ""
    load_time: str = ""

    @property
    def decided(self) -> bool:
        return bool(
            self.links or self.no_effect or self.canary or self.blind_spots or self.load_time
        )


class LinkKind(Protocol):
    """One kind of first hop, from a changed item to targets. `reach` must not do I/O:
    everything it reads is in the index. It returns an empty Outcome for a change it does
    not handle."""

    name: str

    def reach(self, change: object, index: LinkIndex) -> Outcome: ...
