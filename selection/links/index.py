"""What link kinds read: the head (and base) sources, the OpInfo database, the universe of
instances, the device facts and, when one was recorded, the observed map. Pure: every
derived index is built lazily from these and memoized here, so a kind that is never asked
costs nothing."""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from selection.device import DeviceFacts
    from selection.links.base import Target
    from selection.links.explore import Explorer
    from selection.links.graph import Edge, LinkGraph
    from selection.links.native_calls import NativeCalls
    from selection.model import TestInstance
    from selection.observed import ObservedMap, Pair
    from selection.oplists import OpDatabase
    from selection.sources.analysis_cache import AnalysisCache
    from selection.universe import Universe
    from selection.upstream import ParsedTrees

T = TypeVar("T")


@dataclass
class LinkIndex:
    head: ParsedTrees
    base: ParsedTrees
    db: OpDatabase
    universe: Universe
    facts: DeviceFacts
    observed: ObservedMap | None = None
    cache: AnalysisCache | None = None
    native_calls: NativeCalls | None = None  # the head release's C++ calls between ops
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """Build a derived index once (key: the builder's module-qualified name)."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def memo_per(self, space: str, key: Hashable, build: Callable[[], T]) -> T:
        """A value derived once per `key` (many changes ask for the same roots or pairs);
        `space` names the derivation, as `memo`'s key does."""
        found: dict[Hashable, T] = self.memo(space, dict)
        if key not in found:
            found[key] = build()
        return found[key]

    @property
    def explorer(self) -> Explorer:
        from selection.links.cpp import head_native_calls
        from selection.links.explore import Explorer
        from selection.links.lifecycle import per_test_methods

        def build() -> Explorer:
            lowered: dict[str, list[str]] = {}
            for aten, ops in self.facts.ops_by_aten.items():
                for op in ops:
                    lowered.setdefault(op, []).append(aten)
            explorer = Explorer(
                self.head,
                self.db,
                self.universe,
                {k: tuple(v) for k, v in lowered.items()},
                self.cache,
                head_native_calls(self),
            )
            explorer.build(per_test_methods(explorer.summary))
            return explorer

        return self.memo("explorer", build)

    @property
    def graph(self) -> LinkGraph:
        return self.explorer.graph

    def by_op(self) -> dict[str, list[TestInstance]]:
        return self.memo("by_op", self.universe.by_op)

    def by_template(self) -> dict[tuple[str, str, str], list[TestInstance]]:
        return self.memo("by_template", self.universe.by_template)

    @functools.cached_property
    def tracing(self) -> Callable[[TestInstance], bool]:
        """Does an instance trace its op (so that Python decompositions and meta kernels
        run)? `tracing_rule`, built once."""
        return tracing_rule(self.universe, self.facts)

    def functions_reached(
        self,
        start: Iterable[Target],
        keep: Callable[[Target], bool] = lambda _t: True,
        methods: Callable[[Target], bool] = lambda _m: True,
        follows: Callable[[Edge], bool] = lambda _e: True,
    ) -> set[Target]:
        """The functions `start` reaches over the graph's uses (the used functions `keep`
        accepts, by edges `follows` accepts), and a class's methods that `methods` accepts
        (all, by default: an instance may be used for any of them)."""
        graph, explorer = self.graph, self.explorer
        seen: set[Target] = set()
        queue = deque(start)
        while queue:
            node = queue.popleft()
            if node in seen:
                continue
            seen.add(node)
            for edge in graph.uses.get(node, ()):
                used = edge.used
                if used.kind == "function" and keep(used) and used not in seen and follows(edge):
                    queue.append(used)
            if "." not in node.name:  # a class: its methods (its bases' too) run too
                queue.extend(m for m in explorer.methods_of(node) if methods(m))
        return seen

    def by_pair(self) -> dict[Pair, list[TestInstance]]:
        """Instances by (database, op full name, dtype): how the observed map names them."""

        def build() -> dict[Pair, list[TestInstance]]:
            index: dict[Pair, list[TestInstance]] = {}
            for inst in self.universe.instances:
                if inst.op is not None and inst.dtype is not None:
                    index.setdefault((inst.database, inst.op, inst.dtype), []).append(inst)
            return index

        return self.memo("by_pair", build)


def tracing_rule(universe: Universe, facts: DeviceFacts) -> Callable[[TestInstance], bool]:
    """Whether an instance traces its op: every instance on a device whose eager ops are
    compiled; else those of templates that compile, fake-tensor, make_fx or export it, or
    whose body is not known (selection.gradients.traces). The mutation benchmark's truth
    asks the same question of the instances it judges."""
    if facts.eager_ops_compiled:
        return lambda inst: True
    eager_only = frozenset(
        (t.file, t.test_class, t.method) for t in universe.templates if t.traces is False
    )
    return lambda inst: (inst.file, inst.test_class, inst.template) not in eager_only
