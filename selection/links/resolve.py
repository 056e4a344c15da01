"""Resolve an outcome's links to the test instances they reach. Pure.

Static: the link graph's reverse closure from the links' targets up to the roots (entries
and templates), then the roots' instances. A root reached only through a registration edge
(a decomposition or meta kernel of the op it tests) reaches only the instances that trace
their op -- templates that compile, fake-tensor, make_fx or export it (or whose body is not
known), or every instance on a device whose eager ops are compiled (`LinkIndex.tracing`).

Observed: when a dependency map was recorded for the base version and device, a changed
function or ATen op reaches every (op, dtype) pair that executed it -- in the eager paths,
or in the compiled path for instances that trace; for recorded pairs the recording decides
(a recorded pair that did not execute it is not reached), pairs without a recording keep
the static answer. The recording decides only for code it saw run at all -- a function no
recorded pair executed (an `error_inputs_func`, a `ref=`, a branch only later samples take,
a decorator factory or constant used at import) is not known to be unused, so its static
links stand -- and only for what entries reach: a template's own code is never recorded.
Nor does it decide for a change that matters only where a caller omits an argument (a
schema default): it records what ran, not how it was called.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from selection.links.base import Link, Step, Target
from selection.links.graph import (
    DERIVATIVE,
    Edge,
    Follow,
    default_follow,
    doubted,
    node_of,
    omitting,
)
from selection.links.index import LinkIndex
from selection.model import TestInstance
from selection.observed import ObservedMap, Pair

Bits = tuple[int, int]  # (roots reached without a registration edge, only through one)


@dataclass
class Resolution:
    reached: dict[str, tuple[TestInstance, Link]] = field(default_factory=dict)
    observed: int = 0  # instances whose answer came from the recording
    # When the links reach more than `limit` instances: no evidence is walked; the roots
    # reached are `bits` (LinkGraph.root_bits), and `node_ids` materializes them on demand
    # (the caller treats the change as machinery, and many changes share the same roots).
    broad: bool = False
    bits: Bits = (0, 0)
    count: int = 0  # instances reached (of those `within`, when given)
    # broad through the recording: its (pairs, traced only) runs, beside `reached`
    observed_runs: tuple[tuple[frozenset[Pair], bool], ...] = ()
    # what the recording reached: per pair, its entry, the path (an index into
    # `observed_evidence`) and its instances, listed apart from `reached` (a release upgrade
    # resolves millions of them); `pair_link` makes the link they share
    by_pair: list[tuple[Target, int, list[TestInstance]]] = field(default_factory=list)
    observed_evidence: tuple[tuple[Step, ...], ...] = ()
    # a changed default's edges left out as doubts (selection.links.graph.doubted): the
    # mapper aims a canary at the tests nearest them (`doubt_aims`)
    doubts: list[Edge] = field(default_factory=list)

    @property
    def listed(self) -> bool:
        """Are the instances it reaches listed (`reached`, `by_pair`)? A broad answer lists
        none: its `count` says how many it reaches."""
        return bool(self.reached or self.by_pair)

    def items(self) -> Iterator[tuple[TestInstance, Link]]:
        """Each instance reached, with the first link that reaches it."""
        yield from self.reached.values()
        for target, path, instances in self.by_pair:
            link = self.pair_link(target, path)
            for inst in instances:
                if inst.node_id not in self.reached:
                    yield inst, link

    def pair_link(self, target: Target, path: int) -> Link:
        """The link of a `by_pair` entry (made when asked: most are never needed)."""
        return Link(target, self.observed_evidence[path], "observed")

    def node_ids(self, index: LinkIndex) -> frozenset[str]:
        if not self.broad:
            return frozenset(inst.node_id for inst, _ in self.items())
        if self.observed_runs:
            return frozenset(_run_ids(self.observed_runs, index).union(self.reached))
        ids = frozenset(i.node_id for i in _instances_of(self.bits, index))
        return ids | frozenset(self.reached) if self.reached else ids

    def add(self, inst: TestInstance, link: Link) -> None:
        self.reached.setdefault(inst.node_id, (inst, link))


def root_instances(root: Target, index: LinkIndex, traced_only: bool = False) -> list[TestInstance]:
    """A root's instances (`traced_only`: those that trace their op). Many changes reach
    the same roots: each list is built once."""
    return index.memo_per(
        "resolve.root_instances",
        (root, traced_only),
        lambda: _root_instances(root, index, traced_only),
    )


def _root_instances(root: Target, index: LinkIndex, traced_only: bool) -> list[TestInstance]:
    if traced_only:
        return _traced(root_instances(root, index), index)
    if root.kind == "template":
        return index.by_template().get((root.path, root.scope, root.name), [])
    # an entry's scope is its database: a ForeachFuncInfo('abs') ("foreach", `_foreach_abs`
    # upstream) is not the OpInfo 'abs', and no reused instance is of its database
    return [i for i in index.by_op().get(root.full_name, []) if i.database == root.scope]


def _traced(instances: list[TestInstance], index: LinkIndex) -> list[TestInstance]:
    """Those of the instances that trace their op (LinkIndex.tracing)."""
    tracing = index.tracing
    return [i for i in instances if tracing(i)]


def _instances_of(bits: Bits, index: LinkIndex) -> list[TestInstance]:
    plain, registered = bits
    found = [i for root in index.graph.roots(plain) for i in root_instances(root, index)]
    found += [
        i for root in index.graph.roots(registered) for i in root_instances(root, index, True)
    ]
    return found


def _count(bits: Bits, index: LinkIndex, within: frozenset[str] | None, limit: int) -> int:
    """How many instances (of those `within`) a set of roots reaches. Roots overlap (an
    entry's instances and a template's), so the per-root counts (memoized) only bound it
    from above; the exact count, which needs the set of ids, is taken only when that bound
    passes `limit` -- and the set is not kept. Many changes reach the same roots (every
    caller of torch._check): each answer is worked out once."""
    return index.memo_per(
        "resolve.answers", (bits, limit, within), lambda: _counted(bits, index, within, limit)
    )


def _counted(bits: Bits, index: LinkIndex, within: frozenset[str] | None, limit: int) -> int:
    bound = 0
    for traced_only, part in ((False, bits[0]), (True, bits[1])):
        for root in index.graph.roots(part):
            bound += _root_count(root, traced_only, index, within)
    if bound <= limit:
        return bound
    return index.memo_per(
        "resolve.exact_counts", (bits, within), lambda: _within(_instances_of(bits, index), within)
    )


def _root_count(
    root: Target, traced_only: bool, index: LinkIndex, within: frozenset[str] | None
) -> int:
    return index.memo_per(
        "resolve.root_counts",
        (root, traced_only, within),
        lambda: _within(root_instances(root, index, traced_only), within),
    )


def _within(instances: list[TestInstance], within: frozenset[str] | None) -> int:
    """How many distinct instances, of those `within` when given."""
    ids = {i.node_id for i in instances}
    return len(ids & within if within is not None else ids)


def _pair(inst: TestInstance) -> Pair | None:
    if inst.op is None or inst.dtype is None:
        return None
    return (inst.database, inst.op, inst.dtype)


def resolve(
    links: list[Link],
    index: LinkIndex,
    limit: int | None = None,
    within: frozenset[str] | None = None,
) -> Resolution:
    """`limit`: past this many instances reached (of those in `within`, when given),
    statically or, where the recording decides, through it, answer `broad` (no evidence)."""
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
    traced = all(link.traced_only for link in through_graph)
    by_call_site = all(link.by_call_site for link in through_graph)
    # (`root_bits` counts under the default rules, which a default change's calls do not
    # follow: such a change is resolved in full, never answered `broad`)
    if limit is not None and not by_call_site:
        plain, registered = index.graph.root_bits(link.target for link in through_graph)
        # a traced-only change counts every root as one it reaches only where traced
        result.bits = (0, plain | registered) if traced else (plain, registered)
        result.count = _count(result.bits, index, within, limit)
        if result.count > limit:
            result.broad = True
            return result
    follow: Follow = default_follow
    if by_call_site:
        positions = _positions(through_graph)
        follow = omitting(positions)
        result.doubts = doubted(index.graph, positions)
        passed_over = frozenset().union(*(link.passed_over for link in through_graph))
        if passed_over:
            follow = _not_through(passed_over, follow)
    ops: set[Target] = set()  # what the kernels on the way up are registered for
    roots = index.graph.reach(through_graph, follow, crossed=ops)
    observed = index.observed
    per_link = [_asked(link) for link in through_graph]
    if (
        observed is None
        or by_call_site
        or not all(_saw(observed, questions) for questions in per_link)
    ):
        for root, link in roots.items():
            for inst in root_instances(root, index, traced or "registration" in link.kinds):
                result.add(inst, link)
        return result
    ran = _union(
        _observed_pairs(observed, asked, link.ran_with)
        for asked, link in zip(per_link, through_graph, strict=True)
    )
    dispatching = _dispatching(observed, ops, _registered_roots(roots)) - ran[0] - ran[1]
    runs = (*ran, dispatching)
    first = through_graph[0]
    kernels = frozenset(ops)
    _with_observed(result, roots, observed, runs, first, index, traced, limit, within, kernels)
    return result


def _names(ops: frozenset[Target], shown: int = 3) -> str:
    names = sorted(f"aten::{op.name}" for op in ops)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _registered_roots(roots: dict[Target, Link]) -> frozenset[tuple[str, str]]:
    """(database, full name) of the entries the graph reaches through a registration: those
    whose op under test dispatches to a kernel on the way up."""
    return frozenset(
        (root.scope, root.full_name)
        for root, link in roots.items()
        if root.kind == "entry" and "registration" in link.kinds
    )


def _dispatching(
    observed: ObservedMap, ops: set[Target], entries: frozenset[tuple[str, str]]
) -> set[Pair]:
    """Of the pairs of `entries`, those whose recorded eager paths dispatched one of the ops
    (the eager paths run every sample, the compiled one its first only): an instance tracing
    their samples runs the kernel registered for it, whether or not the compiled recording
    did (`matmul` compiles a vector product, `test_fake` traces its matrix samples through
    `meta_mm` too). The eager paths also dispatch what builds the samples and the variants:
    only the entries the graph says dispatch to the kernel count."""
    pairs: set[Pair] = set()
    for op in ops:
        pairs |= observed.pairs_running_aten(op.aten_base)
    return {pair for pair in pairs if (pair[0], pair[1]) in entries}


def _not_through(passed_over: frozenset[tuple[Target, Target]], follow: Follow) -> Follow:
    """`follow`, but not along edges whose calls pass values a change leaves alone."""
    return lambda edge: (edge.user, edge.used) not in passed_over and follow(edge)


def _positions(links: list[Link]) -> dict[Target, int]:
    """Per changed op's node, the position of the changed default: the uses default changes
    reach are every use but a call known to pass it (`omitting`). Of several changes to one
    op's node (overloads), the latest position decides (a call passing fewer arguments may
    omit that one); a node whose position is not known is left out (every use reaches)."""
    positions: dict[Target, int | None] = {}
    for link in links:
        node = node_of(link.target)
        known = positions.get(node, -1)
        if link.default_from is None or known is None:
            positions[node] = None
        else:
            positions[node] = max(known, link.default_from)
    return {node: p for node, p in positions.items() if p is not None}


def doubt_aims(
    doubts: list[Edge], index: LinkIndex, within: frozenset[str] | None
) -> dict[str, tuple[str, ...]]:
    """Per caller a default change is in doubt for (`Resolution.doubts`), by op name, the
    node ids of the tests nearest it, where a kernel that now omits the argument would
    break first: the calling op's own entries, else the nearest tests up its users
    (LinkGraph.nearest_roots), of those `within` when given (an empty tuple: none)."""
    found: dict[str, tuple[str, ...]] = {}
    gradient_free = index.memo(
        "resolve.gradient_free", lambda: index.universe.templates_without("computes_gradients")
    )
    for caller in sorted({edge.user for edge in doubts}, key=lambda t: t.name):
        # a backward formula's helper runs only where gradients are computed
        backward = all(e.kind == DERIVATIVE for e in doubts if e.user == caller)
        ids: dict[str, None] = {}
        for root, derived in index.graph.nearest_roots(caller, derived=backward).items():
            for inst in root_instances(root, index):
                if derived and (inst.file, inst.test_class, inst.template) in gradient_free:
                    continue
                if within is None or inst.node_id in within:
                    ids[inst.node_id] = None
        found[caller.name] = tuple(ids)
    return found


def _with_observed(
    result: Resolution,
    roots: dict[Target, Link],
    observed: ObservedMap,
    ran: tuple[set[Pair], set[Pair], set[Pair]],
    first: Link,
    index: LinkIndex,
    traced: bool,
    limit: int | None,
    within: frozenset[str] | None,
    kernel_ops: frozenset[Target] = frozenset(),
) -> None:
    """`ran`: the pairs that ran it in the eager paths, only in the compiled one, and those
    that dispatch an op it is registered for (`_dispatching`, traced instances only).
    `traced`: the change runs only where an instance traces its op. Past `limit`
    instances (counted per pair, of those `within`), the answer is `broad`: what the
    recording adds makes the change machinery, and its instances are listed only when
    asked (`Resolution.node_ids`)."""
    for root, link in roots.items():
        for inst in _unrecorded(root, index, traced or "registration" in link.kinds):
            result.add(inst, link)
    eager, compiled, dispatching = (_with_refs(pairs, index) for pairs in ran)
    runs: tuple[tuple[frozenset[Pair], bool], ...] = (
        (frozenset(eager), traced),
        (frozenset(compiled), True),
        (frozenset(dispatching), True),
    )
    if limit is not None and limit >= 0:
        static = result.reached.keys() & within if within is not None else result.reached
        # an upper bound first (pairs counted apart; a template's instances may be counted
        # twice, and pairs may be both eager and compiled): the exact set only when past it
        bound = len(static) + sum(
            sum(map(_pair_counts(only, index, within).__getitem__, pairs)) for pairs, only in runs
        )
        if bound > limit:
            ids = _run_ids(runs, index).union(result.reached)
            count = len(ids & within if within is not None else ids)
            if count > limit:
                result.broad, result.count, result.observed_runs = True, count, runs
                return
    where = f"on {observed.device} (recorded, torch {observed.torch_version})"
    entries: dict[tuple[Pair, bool], tuple[Target, list[TestInstance]] | None]
    entries = index.memo("resolve.pair_entries", dict)
    done: set[Pair] = set()
    found = result.by_pair
    # the second path reaches only the tests that trace their op (compile, fake tensors,
    # make_fx, export): say that, not "compiled", to a fake-tensor test's reader
    # the third: a kernel registered for an op runs wherever a sample dispatching it is
    # traced, which the compiled recording (its first sample only) may not have done
    paths = (
        "executed when it ran",
        "executed when its op was traced (recorded under torch.compile)",
        f"runs where its samples are traced: they dispatch {_names(kernel_ops)}, which it is "
        "the Python kernel of (or calls into)",
    )
    result.observed_evidence = tuple(
        (*first.evidence, Step("", "", f"{path} {where}")) for path in paths
    )
    for path, (pairs, traced_only) in enumerate(runs):
        for pair in sorted(pairs - done):
            key = (pair, traced_only)
            if key not in entries:
                instances = pair_instances(pair, traced_only, index)
                entries[key] = (inst_target(instances[0]), instances) if instances else None
            entry = entries[key]
            if entry is None:
                continue
            done.add(pair)
            # one link per pair and path: every instance of the pair has the same entry
            found.append((entry[0], path, entry[1]))
            result.observed += len(entry[1])


def _unrecorded(root: Target, index: LinkIndex, traced_only: bool) -> list[TestInstance]:
    """The root's instances the recording does not decide for, each list built once. The
    recording runs an entry's samples and callables, never a template's body: what a
    template reaches, and pairs without a recording, keep the static link."""

    def build() -> list[TestInstance]:
        instances = root_instances(root, index, traced_only)
        observed = index.observed
        if root.kind == "template" or observed is None:
            return instances
        return [i for i in instances if not _recorded_pair(i, observed)]

    return index.memo_per("resolve.unrecorded", (root, traced_only), build)


def _recorded_pair(inst: TestInstance, observed: ObservedMap) -> bool:
    pair = _pair(inst)
    return pair is not None and observed.is_recorded(pair)


def _run_ids(runs: tuple[tuple[frozenset[Pair], bool], ...], index: LinkIndex) -> set[str]:
    """The ids of the instances of recorded pairs' runs ((pairs, traced only), ...)."""
    return {
        i.node_id
        for pairs, traced_only in runs
        for pair in pairs
        for i in pair_instances(pair, traced_only, index)
    }


def pair_instances(pair: Pair, traced_only: bool, index: LinkIndex) -> list[TestInstance]:
    """A recorded pair's instances (`traced_only`: those that trace their op), each list
    built once."""

    def build() -> list[TestInstance]:
        instances = index.by_pair().get(pair, [])
        return _traced(instances, index) if traced_only else instances

    return index.memo_per("resolve.pair_instances", (pair, traced_only), build)


def _pair_counts(
    traced_only: bool, index: LinkIndex, within: frozenset[str] | None
) -> defaultdict[Pair, int]:
    """Per recorded pair, its instances (`traced_only`: that trace their op) of those
    `within`, counted once for all pairs."""

    def build() -> defaultdict[Pair, int]:
        counts: defaultdict[Pair, int] = defaultdict(int)
        for pair in index.by_pair():
            counts[pair] = _within(pair_instances(pair, traced_only, index), within)
        return counts

    return index.memo_per("resolve.pair_counts", (traced_only, within), build)


def _with_refs(pairs: set[Pair], index: LinkIndex) -> set[Pair]:
    """The pairs, and those of the PythonRefInfos built on their OpInfos: a ref's templates
    run the torch op it is built from beside the reference (`test_python_ref` compares the
    two), while the recording runs the reference alone."""
    refs = index.memo("resolve.refs_by_parent", lambda: _refs_by_parent(index))
    return pairs | {(db, ref, dtype) for db, op, dtype in pairs for ref in refs.get(op, ())}


def _refs_by_parent(index: LinkIndex) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for entry in index.db.entries.values():
        parent = index.db.parent(entry)
        if parent is not None:
            found.setdefault(parent.full_name, []).append(entry.full_name)
    return found


# What the recording is asked about: a target, and whether what is nested in it counts.
Asked = tuple[Target, bool]


def _asked(link: Link) -> list[Asked]:
    """For an edit confined to functions nested in the link's function: those functions, and
    the pairs that ran the function's own code (the recording may have stopped before one
    reached the nested function: a sample cap, a memo). Else the target with all it nests.
    Only the nested entries (True) tell whether the recording saw the edited code run."""
    target = link.target
    if target.kind == "function" and link.observed_as:
        inner = [(Target.function(target.path, name), True) for name in link.observed_as]
        return [*inner, (target, False)]
    return [(target, True)]


def recording_saw(observed: ObservedMap, link: Link) -> bool:
    """Did the recording see the link's changed code run (so that it decides which recorded
    pairs it reaches)? For an edit confined to nested functions: those functions."""
    return _saw(observed, _asked(link))


def _saw(observed: ObservedMap, questions: list[Asked]) -> bool:
    return any(seen_running(observed, t) for t, nested in questions if nested)


def seen_running(observed: ObservedMap, target: Target) -> bool:
    """Did any recorded pair run it (in any path)? Only then can the recording say which
    pairs do not."""
    return bool(ran_pairs(observed, target))


def ran_pairs(observed: ObservedMap, target: Target) -> set[Pair]:
    """The recorded pairs that ran a function or an ATen op, in any path."""
    if target.kind == "function":
        path, name = target.path, target.name
        eager = observed.pairs_running_function(path, name)
        return eager | observed.pairs_running_function(path, name, compiled=True)
    if target.kind == "aten":
        eager = observed.pairs_running_aten(target.aten_base)
        return eager | observed.pairs_running_aten(target.aten_base, compiled=True)
    return set()


def _union(ran: Iterable[tuple[set[Pair], set[Pair]]]) -> tuple[set[Pair], set[Pair]]:
    """Several links' (eager, only compiled) pairs as one."""
    eager: set[Pair] = set()
    compiled: set[Pair] = set()
    for more_eager, more_compiled in ran:
        eager |= more_eager
        compiled |= more_compiled
    return eager, compiled - eager


def _observed_pairs(
    observed: ObservedMap, asked: list[Asked], ran_with: Target | None = None
) -> tuple[set[Pair], set[Pair]]:
    """(pairs that executed a target in the eager paths, pairs that did only compiled);
    with `ran_with` (Link.ran_with), only pairs that ran that function too, in that path."""
    eager: set[Pair] = set()
    compiled: set[Pair] = set()
    for target, nested in asked:
        if target.kind == "function":
            path, name = target.path, target.name
            eager |= observed.pairs_running_function(path, name, nested=nested)
            compiled |= observed.pairs_running_function(path, name, True, nested)
        else:
            # any overload: a kernel is shared by an op's overloads (`div_out_mode` serves
            # div.Tensor_mode, its in-place and out= forms through structured_delegate)
            eager |= observed.pairs_running_aten(target.aten_base)
            compiled |= observed.pairs_running_aten(target.aten_base, compiled=True)
    if ran_with is not None:
        # in either path: the map lists a function under compiled paths only where no
        # eager path of the pair ran it
        both = ran_pairs(observed, ran_with)
        eager &= both
        compiled &= both
    return eager, compiled - eager


def inst_target(inst: TestInstance) -> Target:
    name, variant = inst.op or "", inst.op_variant
    if variant and name.endswith("." + variant):
        name = name[: -len(variant) - 1]
    return Target.entry(inst.database, name, variant)
