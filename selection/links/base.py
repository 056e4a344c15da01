"""The link contract: targets, evidence, links, and the protocol every link kind follows. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from selection.links.index import LinkIndex


@dataclass(frozen=True)
class Target:
    """Something a change reaches; `key` identifies it across link kinds."""

    kind: str  # aten | function | entry | template | instances
    name: str  # "add.Tensor" | "gelu" | "add" | "test_out" | a label
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
    how: str  # "@register_decomposition(aten.gelu_backward)", "calls _canonical_mask", ...

    def __str__(self) -> str:
        where = f"{self.path}:{self.symbol}" if self.symbol else self.path
        return f"{where} {self.how}".strip()


@dataclass(frozen=True)
class Link:
    """A changed item reaches `target`; `evidence` is the chain of hops, first to last."""

    target: Target
    evidence: tuple[Step, ...] = ()
    basis: str = "static"  # static | observed


class LinkKind(Protocol):
    """One kind of link. `reach` must not do I/O: everything it reads is in the index."""

    name: str

    def reach(self, change: object, index: LinkIndex) -> list[Link]: ...


@dataclass
class Reached:
    """What one change reaches once its links are resolved: per instance, the link that
    reaches it (the first found), and why nothing was reached when nothing was."""

    links: list[Link] = field(default_factory=list)
    no_effect: str = ""  # a reason, when the change reaches nothing by design
