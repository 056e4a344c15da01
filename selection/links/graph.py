"""The link graph: who uses what, with the evidence of each edge. Pure.

Nodes are `Target`s. An edge `user -> used` says running `user` may run `used`; it carries
the link kind that made it (`call`, `registration`, `callable`, `dispatch`, `derivative`,
...) and a `Step` naming where and how. What a change reaches is the reverse closure from
its targets: every user, transitively, up to the roots (entries and templates), each with
the chain of edges that reaches it -- the evidence a cause chain shows.

Two rules keep the closure to real uses:
- test code reaches an ATen op only as the op under test (`DISPATCHING` edges): a
  reference function calling `torch.abs` runs the eager kernel, never its decomposition;
- a Python kernel registered for an op (a decomposition, a meta kernel) runs when that op
  is traced (compiled, or run on FakeTensors), so past a `registration` edge the roots
  reached count only where their instances trace (the second bitset), and only uses that
  trace the op with the op under test are followed: the entries dispatching to it, and the
  library code that calls it -- `F.interpolate` calling `torch._C._nn.upsample_bilinear2d`
  for the `upsample_bilinear` OpInfo, `Hardswish.forward` for the ModuleInfo, another op's
  decomposition (traced with it, decomposed by the same table) -- but not test code
  (a reference function or a sample-input builder calling the op runs it eagerly).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from selection.links.base import Link, Step, Target, fewest_arguments

ROOT_KINDS = ("entry", "template")


@dataclass(frozen=True)
class Edge:
    user: Target
    used: Target
    kind: str
    step: Step


Follow = Callable[[Edge], bool]


def node_of(target: Target) -> Target:
    """The graph node of a target: ATen ops by base name (an overload is evidence, not a
    node: the entries dispatch to the op, whichever overload a sample picks)."""
    if target.kind == "aten" and "." in target.name:
        return Target.aten(target.aten_base)
    return target


# Edges by which test code dispatches to the op under test (the rest of what test code
# calls -- torch.abs in a reference function, .add() building inputs -- runs the eager
# C++ kernel, never the op's Python decomposition or meta kernel).
DISPATCHING = ("dispatch", "callable", "python-ref")


def default_follow(edge: Edge) -> bool:
    """Into an ATen op, test code counts only when it dispatches to it as the op under test."""
    if edge.used.kind != "aten" or edge.kind in DISPATCHING:
        return True
    return not _is_test_target(edge.user)


def omitting(positions: Mapping[Target, int]) -> Follow:
    """For changed schema defaults, which matter wherever a caller omits the argument: every
    use (test code's eager calls from sample inputs included), except a call of a changed
    op known to pass its argument: `grad.slice_symint(dim, start, end, step)` in a backward
    formula is no use of `slice`'s default `dim` (position 1). `positions`: per changed
    op's node, the position of its first changed default; edges into any other node are
    followed (an argument count there is another op's)."""

    def follow(edge: Edge) -> bool:
        position = positions.get(edge.used)
        if position is None:
            return True
        passed = edge.step.arguments
        if passed is None:
            return not older_source_passes(edge.step, position)
        return passed <= position

    return follow


def older_source_passes(step: Step, position: int) -> bool:
    """A hop whose calls are not known to pass the argument at `position` (a release's
    compiled calls), but all passed it in an older release's source (`Step.older_arguments`):
    a doubt, which `omitting` does not follow (selection.links.resolve aims a canary at it)."""
    older = step.older_arguments
    return step.arguments is None and older is not None and older > position


def doubted(graph: LinkGraph, positions: Mapping[Target, int]) -> list[Edge]:
    """The edges into the changed ops' nodes that `omitting` leaves out as doubts."""
    return [
        edge
        for node, position in positions.items()
        for edge in graph.users.get(node, ())
        if older_source_passes(edge.step, position)
    ]


def _follows_after_registration(edge: Edge) -> bool:
    """Past a registration edge: a use that traces the op together with the op under test
    (an entry dispatching to it or naming the library code it runs -- `op=`, a ModuleInfo's
    module class -- library code calling it), not test code running it eagerly."""
    if not default_follow(edge):
        return False
    if edge.kind in DISPATCHING or not _is_test_target(edge.user):
        return True
    return edge.user.kind == "entry" and edge.kind == "argument" and not _is_test_target(edge.used)


def _is_test_target(target: Target) -> bool:
    if target.kind in ("entry", "template"):
        return True
    return target.path.startswith(("test/", "torch/testing/"))


class LinkGraph:
    def __init__(self) -> None:
        self.users: dict[Target, list[Edge]] = {}
        self.uses: dict[Target, list[Edge]] = {}
        # uses in code only another device runs, by the target used (never followed)
        self.device_users: dict[Target, list[Step]] = {}
        self._seen: dict[tuple[Target, Target, str], Edge] = {}
        self._roots: list[Target] = []
        self._bits: dict[Target, tuple[int, int]] | None = None
        # `users_among`'s closures, by label: (the wanted nodes, per node their bitset)
        self._closures: dict[str, tuple[list[Target], dict[Target, int]]] = {}

    def add(self, user: Target, used: Target, kind: str, step: Step) -> None:
        """One edge per (user, used, kind): the first step found is its evidence, with the
        fewest arguments any of the calls it stands for passes (`Step.arguments`: an edge
        from a backward formula and one from the C++ helper it calls are one edge; the
        step's text then names the first call, its count may be another's)."""
        user, used = node_of(user), node_of(used)
        if user == used:
            return
        key = (user, used, kind)
        known = self._seen.get(key)
        if known is not None:
            arguments = fewest_arguments(known.step.arguments, step.arguments)
            older = None  # only where the count is not known (Step.older_arguments)
            if arguments is None:
                older = fewest_arguments(_assumed(known.step), _assumed(step))
            merged = replace(known.step, arguments=arguments, older_arguments=older)
            if merged != known.step:
                self._replace(known, Edge(user, used, kind, merged))
            return
        edge = self._seen[key] = Edge(user, used, kind, step)
        self.users.setdefault(used, []).append(edge)
        self.uses.setdefault(user, []).append(edge)

    def _replace(self, old: Edge, new: Edge) -> None:
        self._seen[(new.user, new.used, new.kind)] = new
        for edges in (self.users[old.used], self.uses[old.user]):
            edges[edges.index(old)] = new

    def add_device_use(self, used: Target, step: Step) -> None:
        self.device_users.setdefault(node_of(used), []).append(step)

    def __contains__(self, target: Target) -> bool:
        return target in self.users or target in self.uses

    # -- which roots reach a node, for all nodes at once ---------------------------------------
    def root_bits(self, targets: Iterable[Target]) -> tuple[int, int]:
        """The roots that transitively use any of `targets` (under `default_follow`), as
        bitsets over the roots: (reached without a registration edge, reached only through
        one -- those run the registered kernel only where the op is traced). Cheap for every
        change, where `reach` (with evidence) walks the graph each time."""
        bits = self._root_bits()
        plain = registered = 0
        for target in targets:
            found = bits.get(node_of(target), (0, 0))
            plain |= found[0]
            registered |= found[1]
        return plain, registered & ~plain

    def users_among(
        self,
        label: str,
        targets: Iterable[Target],
        wanted: Callable[[Target], bool],
        follow: Follow,
    ) -> list[Target]:
        """The nodes `wanted` picks among `targets` and their transitive users along the
        edges `follow` accepts. The closure is built once per `label` (which names the
        `wanted` and `follow` pair), as bitsets over the wanted nodes."""
        if label not in self._closures:
            nodes = list(set(self.users) | set(self.uses))
            # in a fixed order: the caller keeps the first chain found per node
            picked = sorted((n for n in nodes if wanted(n)), key=_order)
            own = {node: 1 << i for i, node in enumerate(picked)}
            self._closures[label] = picked, _closure(self, nodes, own, follow)
        picked, bits = self._closures[label]
        found = 0
        for target in targets:
            found |= bits.get(node_of(target), 0)
        digits = bin(found)[:1:-1]  # least significant first
        return [picked[i] for i, digit in enumerate(digits) if digit == "1"]

    def nearest_roots(
        self, start: Target, follow: Follow = default_follow, derived: bool = False
    ) -> dict[Target, bool]:
        """The roots closest to `start` up its users: those of the first level (in edges)
        that holds any. An op's own entries, else the tests of the nearest code using it
        (`_pad_circular` has no OpInfo: `nn.functional.pad`'s, through `pad`). Each with
        whether every chain to it passes a derivative formula (from `start` too, when
        `derived`): it then matters only where gradients are computed (`cumprod_backward`
        reaches cumprod's tests through cumprod's formula)."""
        level = {node_of(start): derived}
        seen = set(level)
        while level:
            roots: dict[Target, bool] = {}
            above: dict[Target, bool] = {}
            for node, through in level.items():
                for edge in self.users.get(node, ()):
                    if not follow(edge):
                        continue
                    user, chain = edge.user, through or edge.kind == DERIVATIVE
                    found = roots if user.kind in ROOT_KINDS else above
                    if user in seen and user not in found:
                        continue
                    seen.add(user)
                    found[user] = found.get(user, True) and chain  # the least narrowed
            if roots:
                return {root: roots[root] for root in sorted(roots, key=_order)}
            level = above
        return {}

    def roots(self, bits: int) -> list[Target]:
        self._root_bits()
        # one pass over the bits' binary digits (shifting a big int per root is quadratic)
        digits = bin(bits)[:1:-1]  # least significant first, without the "0b"
        return [self._roots[i] for i, digit in enumerate(digits) if digit == "1"]

    def _root_bits(self) -> dict[Target, tuple[int, int]]:
        if self._bits is None:
            self._bits = _propagate(self)
        return self._bits

    def reach(
        self,
        starts: Iterable[Link],
        follow: Follow = default_follow,
        limit: int = 200_000,
        crossed: set[Target] | None = None,
    ) -> dict[Target, Link]:
        """Every root (entry, template) that transitively uses a start, with the shortest
        chain of evidence: the start's own evidence, then one step per edge.

        Two edge kinds narrow which of a root's instances a chain reaches: past a
        `registration` edge, only those that trace the op; past a `derivative` edge (or from
        a start that is one: a changed formula), only those that compute gradients. A chain
        is kept per (root, through a registration, through a derivative), and the root gets
        the least narrowed (`_least_narrowed`), so that a root reached by a plain chain too
        is reached in full, whichever chain is shorter. `crossed`, when given, gets the
        ATen ops of the first registration edge on a chain (a Python kernel that runs the
        start by Python calls alone is registered for them; past it, a kernel calls the
        op, which the tracer may run another way)."""
        best: dict[_State, Link] = {}
        queue: deque[_State] = deque()
        for link in starts:
            state = (node_of(link.target), REGISTRATION in link.kinds, DERIVATIVE in link.kinds)
            if state not in best:
                best[state] = Link(state[0], link.evidence, link.basis, link.kinds)
                queue.append(state)
        visited = 0
        while queue and visited < limit:
            node, registered, derived = state = queue.popleft()
            visited += 1
            link = best[state]
            for edge in self.users.get(node, ()):
                if not follow(edge) or (registered and not _follows_after_registration(edge)):
                    continue
                first = edge.kind == REGISTRATION and not registered  # no op dispatched yet
                if first and crossed is not None and edge.user.kind == "aten":
                    crossed.add(edge.user)
                nxt = (
                    edge.user,
                    registered or edge.kind == REGISTRATION,
                    derived or edge.kind == DERIVATIVE,
                )
                if nxt in best:
                    continue
                best[nxt] = Link(
                    edge.user, (*link.evidence, edge.step), link.basis, (*link.kinds, edge.kind)
                )
                queue.append(nxt)
        by_root: dict[Target, dict[tuple[bool, bool], Link]] = {}
        for (node, registered, derived), link in best.items():
            if node.kind in ROOT_KINDS:
                by_root.setdefault(node, {})[(registered, derived)] = link
        return {root: _least_narrowed(chains) for root, chains in by_root.items()}


def _assumed(step: Step) -> int | None:
    """The count a hop is taken to pass: the known one, else an older source's."""
    return step.arguments if step.arguments is not None else step.older_arguments


REGISTRATION = "registration"
DERIVATIVE = "derivative"
# A derivative formula's edge on a chain whose root is also reached through a registration
# and no formula: neither narrowing holds for every instance, so the link narrows none.
FORMULA_NOT_ONLY = "formula"
_State = tuple[Target, bool, bool]  # (node, through a registration, through a derivative)


def _least_narrowed(chains: Mapping[tuple[bool, bool], Link]) -> Link:
    """The link of a root, from its chains by (through a registration, through a
    derivative): a plain one if any; else one narrowed by a single kind (a chain narrowed
    by both adds no instance to it); with one of each, an instance either may reach is
    reached, so the derivative one, its formula edges marked as narrowing nothing."""
    if (False, False) in chains:
        return chains[(False, False)]
    traced, derived = chains.get((True, False)), chains.get((False, True))
    if traced is not None and derived is not None:
        kinds = tuple(FORMULA_NOT_ONLY if k == DERIVATIVE else k for k in derived.kinds)
        return replace(derived, kinds=kinds)
    return traced or derived or chains[(True, True)]


def _order(target: Target) -> tuple[str, str, str, str, str]:
    return target.kind, target.path, target.scope, target.name, target.variant


def _propagate(graph: LinkGraph) -> dict[Target, tuple[int, int]]:
    """Per node, the bitsets of roots among its transitive users under the same rules as
    `reach`: (without a registration edge, through one). Strongly connected components
    (iterative Tarjan over followed user edges), one pass in topological order of the
    condensation; past a registration edge, the roots that trace the op (`_closure` under
    `_follows_after_registration`)."""
    nodes = list(set(graph.users) | set(graph.uses))
    graph._roots = sorted((n for n in nodes if n.kind in ROOT_KINDS), key=_order)  # fixed order
    own = {root: 1 << i for i, root in enumerate(graph._roots)}
    tracing_roots = _closure(graph, nodes, own, _follows_after_registration)
    users = {
        n: [
            e.user for e in graph.users.get(n, ()) if default_follow(e) and e.kind != "registration"
        ]
        for n in nodes
    }
    components = _components(nodes, users)  # reverse topological: users first
    component_of = {n: i for i, comp in enumerate(components) for n in comp}
    plain: list[int] = []
    registered: list[int] = []
    for i, comp in enumerate(components):
        bits = via = 0
        for node in comp:
            bits |= own.get(node, 0)
            for edge in graph.users.get(node, ()):
                if edge.kind == "registration" and default_follow(edge):
                    # an op's kernel: the roots tracing the op; an entry's: the entry (its own)
                    via |= tracing_roots[edge.user]
            for user in users[node]:
                j = component_of[user]
                if j != i:
                    bits |= plain[j]
                    via |= registered[j]
        plain.append(bits)
        registered.append(via)
    return {n: (plain[component_of[n]], registered[component_of[n]]) for n in nodes}


def _closure(
    graph: LinkGraph, nodes: list[Target], own: dict[Target, int], follow: Follow
) -> dict[Target, int]:
    """Per node, the roots among its transitive users along the edges `follow` accepts."""
    users = {n: [e.user for e in graph.users.get(n, ()) if follow(e)] for n in nodes}
    components = _components(nodes, users)  # users first
    component_of = {n: i for i, comp in enumerate(components) for n in comp}
    found: list[int] = []
    for i, comp in enumerate(components):
        bits = 0
        for node in comp:
            bits |= own.get(node, 0)
            for user in users[node]:
                j = component_of[user]
                if j != i:
                    bits |= found[j]
        found.append(bits)
    return {n: found[component_of[n]] for n in nodes}


def _components(nodes: list[Target], succ: dict[Target, list[Target]]) -> list[list[Target]]:
    """Tarjan's strongly connected components, iteratively; each component comes after
    every component it has an edge to (so `succ`'s targets are finished first)."""
    index: dict[Target, int] = {}
    low: dict[Target, int] = {}
    on_stack: set[Target] = set()
    stack: list[Target] = []
    out: list[list[Target]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[Target, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = succ.get(node, [])
            recursed = False
            while child < len(successors):
                nxt = successors[child]
                child += 1
                if nxt not in index:
                    work.append((node, child))
                    work.append((nxt, 0))
                    recursed = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recursed:
                continue
            if low[node] == index[node]:
                comp: list[Target] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out
