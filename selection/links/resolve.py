"""Resolve an outcome's links to the test instances they reach. Pure.

Static: the link graph's reverse closure from the links' targets up to the roots (entries
and templates), then the roots' instances. Observed: when a dependency map was recorded for
the base version and device, a changed function or ATen op reaches every (op, dtype) that
executed it; for those pairs the recording decides (a recorded pair that did not execute it
is not reached), pairs without a recording keep the static answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selection.links.base import Link, Step, Target
from selection.links.index import LinkIndex
from selection.model import TestInstance
from selection.observed import ObservedMap, Pair

OBSERVABLE = ("function", "aten")


@dataclass
class Resolution:
    reached: dict[str, tuple[TestInstance, Link]] = field(default_factory=dict)
    roots: list[Target] = field(default_factory=list)
    observed: int = 0  # instances whose answer came from the recording
    # When the links reach more than `limit` instances: no evidence is walked; the roots
    # reached are `bits` (LinkGraph.root_bits), and `node_ids` materializes them on demand
    # (the caller treats the change as machinery, and many changes share the same roots).
    broad: bool = False
    bits: int = 0
    count: int = 0  # instances reached (of those `within`, when given)

    def node_ids(self, index: LinkIndex) -> frozenset[str]:
        if not self.broad:
            return frozenset(self.reached)
        ids = frozenset(
            i.node_id for root in index.graph.roots(self.bits) for i in _root_instances(root, index)
        )
        return ids | frozenset(self.reached) if self.reached else ids

    def add(self, inst: TestInstance, link: Link) -> None:
        self.reached.setdefault(inst.node_id, (inst, link))


def _root_instances(root: Target, index: LinkIndex) -> list[TestInstance]:
    if root.kind == "template":
        return index.by_template().get((root.path, root.scope, root.name), [])
    database = "moduleinfo" if root.scope == "moduleinfo" else "opinfo"
    return [i for i in index.by_op().get(root.full_name, []) if i.database == database]


def _count(bits: int, index: LinkIndex, within: frozenset[str] | None, limit: int) -> int:
    """How many instances (of those `within`) a set of roots reaches. Roots overlap (an
    entry's instances and a template's), so the per-root counts (memoized) only bound it
    from above; the exact count, which needs the set of ids, is taken only when that bound
    passes `limit` -- and the set is not kept."""
    counts: dict[Target, int] = index.memo(f"resolve.counts.{id(within)}", dict)
    roots = index.graph.roots(bits)
    bound = 0
    for root in roots:
        if root not in counts:
            instances = _root_instances(root, index)
            counts[root] = (
                len(instances)
                if within is None
                else sum(1 for i in instances if i.node_id in within)
            )
        bound += counts[root]
    if bound <= limit:
        return bound
    ids = {i.node_id for root in roots for i in _root_instances(root, index)}
    return len(ids & within if within is not None else ids)


def _pair(inst: TestInstance) -> Pair | None:
    if inst.op is None or inst.dtype is None:
        return None
    return (inst.database, inst.op, inst.dtype)


def _observed_pairs(observed: ObservedMap, targets: list[Target]) -> set[Pair]:
    pairs: set[Pair] = set()
    for target in targets:
        if target.kind == "function":
            pairs |= observed.pairs_running_function(target.path, target.name)
        else:
            pairs |= observed.pairs_running_aten(target.name)
    return pairs


def resolve(
    links: list[Link],
    index: LinkIndex,
    limit: int | None = None,
    within: frozenset[str] | None = None,
) -> Resolution:
    """`limit`: past this many statically reached instances (of those in `within`, when
    given), answer `broad` (no evidence)."""
    result = Resolution()
    direct = [link for link in links if link.target.kind == "instances"]
    through_graph = [link for link in links if link.target.kind != "instances"]
    by_id = index.memo("by_id", lambda: {i.node_id: i for i in index.universe.instances})
    for link in direct:
        for node_id in link.target.node_ids:
            if node_id in by_id:
                result.add(by_id[node_id], link)
    if not through_graph:
        return result
    if limit is not None:
        result.bits = index.graph.root_bits(link.target for link in through_graph)
        result.count = _count(result.bits, index, within, limit)
        if result.count > limit:
            result.broad = True
            return result
    roots = index.graph.reach(through_graph)
    result.roots = list(roots)
    observed = index.observed
    targets = [link.target for link in through_graph]
    if observed is None or not all(t.kind in OBSERVABLE for t in targets):
        for root, link in roots.items():
            for inst in _root_instances(root, index):
                result.add(inst, link)
        return result
    _with_observed(result, roots, observed, targets, through_graph[0], index)
    return result


def _with_observed(
    result: Resolution,
    roots: dict[Target, Link],
    observed: ObservedMap,
    targets: list[Target],
    first: Link,
    index: LinkIndex,
) -> None:
    executed = _observed_pairs(observed, targets)
    for root, link in roots.items():
        for inst in _root_instances(root, index):
            pair = _pair(inst)
            if pair is None or not observed.is_recorded(pair):
                result.add(inst, link)  # no recording: the static link stands
    step = Step(
        "",
        "",
        f"executed when it ran on {observed.device} (recorded, torch {observed.torch_version})",
    )
    for pair in sorted(executed):
        for inst in index.by_pair().get(pair, []):
            result.add(inst, Link(inst_target(inst), (*first.evidence, step), "observed"))
            result.observed += 1


def inst_target(inst: TestInstance) -> Target:
    name, variant = inst.op or "", inst.op_variant
    if variant and name.endswith("." + variant):
        name = name[: -len(variant) - 1]
    return Target.entry(inst.database, name, variant)
