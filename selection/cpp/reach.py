"""From changed C++ definitions to the ATen ops that run them, with the chain of evidence. Pure.

Breadth first over callers by name (selection.cpp.corpus): a changed function reaches every
definition that uses its name (a `static` one or one in an anonymous namespace: only in its
own file), a kernel registered with `REGISTER_*_DISPATCH(stub, &kernel)` reaches the
functions calling `stub`, and so on. Every definition on the way is checked against the
indexes of selection.cpp.native_index:
- its name is a kernel a native_functions.yaml `dispatch:` entry names (or the implicit
  composite kernel, a structured `TORCH_IMPL_FUNC`, a `ufunc_inner_loop`) -> those overloads;
- it is `TORCH_META_FUNC(name)` -> the overloads of that structured group;
- it is a `TORCH_LIBRARY_IMPL(aten, <our key>)` binding -> the bound op;
- it is a FunctionsManual helper a derivatives.yaml formula calls -> that entry's op
  (gradient only);
an op reached is a name to follow in turn: definitions calling its C++ API (`at::add(`,
`at::add_out(`, `self.add(`: through the dispatcher, which runs the changed kernel) are
callers like any other, so a composite kernel calling the op reaches its own op;
and every op reached is followed once more into the derivative formulas that call it by
name (`gelu_backward` in gelu's formula: gelu's gradients run the changed kernel).
Edges are by name, so the reach may be more than the truth, never less, up to `MAX_VISITED`
definitions (beyond that `truncated` is set and the caller must widen).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from selection.cpp.corpus import CppCorpus
from selection.cpp.items import CppItem
from selection.cpp.native_index import FormulaIndex, KernelUse, NativeIndex
from selection.cpp.paths import FUNCTIONS_MANUAL
from selection.devices import dispatch_key_other_device
from selection.links.base import Step

MAX_VISITED = 5000
NOT_PROPAGATING = frozenset({"impl", "meta", "library"})  # reached through the YAML only

Node = tuple[str, str]  # (path, item key)


@dataclass(frozen=True)
class OpReach:
    op: str  # overload name, e.g. "add.Tensor"
    evidence: tuple[Step, ...]
    gradient_only: bool = False  # through a derivatives.yaml formula


@dataclass
class CppReach:
    ops: list[OpReach] = field(default_factory=list)
    other_keys: list[str] = field(default_factory=list)  # "SparseCPU: add_sparse" (why none)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # callers not read
    truncated: bool = False
    visited: int = 0


# Ops reached through the dispatcher are followed one hop, to the kernels that call the op's
# C++ API in their own file (themselves or through that file's helpers): past that, the callers of callers of `at::mul` are most of ATen (on the
# 2.6.0 tree, unbounded hops sent 32 of 300 sampled changes past the visit cap, p90 1,837
# ops; one hop through helpers still 11, and `mul_kernel` reached ~2,000 ops). What
# dispatches further is what a recorded map (spyre-ci deps record) observes.
MAX_OP_HOPS = 1


@dataclass
class _Walk:
    corpus: CppCorpus
    native: NativeIndex
    formulas: FormulaIndex
    items: dict[Node, CppItem] = field(default_factory=dict)
    parent: dict[Node, tuple[Node | None, Step | None]] = field(default_factory=dict)
    via_name: dict[Node, str] = field(default_factory=dict)
    result: CppReach = field(default_factory=CppReach)
    seen_ops: set[str] = field(default_factory=set)
    op_nodes: list[Node] = field(default_factory=list)  # ops reached, to follow next

    def _ancestors(self, node: Node) -> Iterator[Node]:
        """`node`, then each node it was reached from, back to a changed definition."""
        current: Node | None = node
        while current is not None:
            yield current
            current = self.parent[current][0]

    def chain(self, node: Node) -> tuple[Step, ...]:
        steps = [step for n in self._ancestors(node) if (step := self.parent[n][1]) is not None]
        return tuple(reversed(steps))

    def add_op(self, node: Node, op: str, step: Step, gradient_only: bool = False) -> None:
        if op in self.seen_ops:
            return
        self.seen_ops.add(op)
        self.result.ops.append(OpReach(op, (*self.chain(node), step), gradient_only))
        if not gradient_only and self._op_hops(node) < MAX_OP_HOPS:
            self._follow_op(node, op, step)

    def confined(self, node: Node) -> bool:
        """Reached from a caller of an op's C++ API (`at::mul(...)` in a composite kernel)
        without leaving that caller's file: its callers are looked for in that file only
        (the composite's own helpers and kernel), never across ATen -- every function
        reaching `at::mul` through other files is most of ATen."""
        for before in itertools.islice(self._ancestors(node), 1, None):
            if self.items[before].kind == "op":
                return True
            if before[0] != node[0]:
                return False
        return False

    def _op_hops(self, node: Node) -> int:
        """How many ops (through the dispatcher) the chain to `node` passed already."""
        return sum(self.items[n].kind == "op" for n in self._ancestors(node))

    def _follow_op(self, node: Node, op: str, step: Step) -> None:
        """The op becomes a node whose users are the callers of its C++ API."""
        base = op.split(".", 1)[0]
        op_node = (step.path, f"op:{base}")
        if op_node in self.parent:
            return
        api = tuple(n for n in (base, f"{base}_out", f"{base}_outf", f"{base}_symint")
                    if n in self.native.op_api)  # fmt: skip
        self.items[op_node] = CppItem(op_node[1], op, base, "op", 0, "", defines=api[1:])
        self.parent[op_node] = (node, step)
        self.op_nodes.append(op_node)


def reach_ops(
    start: list[tuple[str, CppItem]],
    corpus: CppCorpus,
    native: NativeIndex,
    formulas: FormulaIndex,
    max_visited: int = MAX_VISITED,
) -> CppReach:
    walk = _Walk(corpus, native, formulas)
    level: list[Node] = []
    for path, item in start:
        node = (path, item.key)
        walk.items[node], walk.parent[node] = item, (None, None)
        level.append(node)
    while level:
        for node in level:
            _terminal(walk, node)
        if len(walk.items) >= max_visited:
            walk.result.truncated = True
            break
        level, walk.op_nodes = [*level, *walk.op_nodes], []
        level = _callers(walk, level)
    _formula_hop(walk)
    walk.result.visited = len(walk.items)
    return walk.result


def _callers(walk: _Walk, level: list[Node]) -> list[Node]:
    global_names: dict[str, Node] = {}
    local_names: dict[str, dict[str, Node]] = {}
    targets: dict[str, str] = {}
    for node in level:
        item = walk.items[node]
        if item.kind in NOT_PROPAGATING or item.other_device:
            continue
        local = item.file_local or walk.confined(node)
        table = local_names.setdefault(node[0], {}) if local else global_names
        for name in item.lookup_names:
            table.setdefault(name, node)
            target = _target_kind(item)
            targets[name] = target if targets.get(name, target) == target else "any"
    corpus, api = walk.corpus, walk.native.op_api
    found = corpus.users({n: targets[n] for n in global_names}, None, api)
    for path, names in local_names.items():
        found += corpus.users({n: targets[n] for n in names}, {path}, api)
    searched = corpus.mentioning(set(global_names))
    walk.result.unreadable = _merge(walk.result.unreadable, corpus.unreadable(searched))
    next_level: list[Node] = []
    for path, item, used in found:
        node = (path, item.key)
        if node in walk.parent:
            continue
        origin = local_names.get(path, {}).get(used) or global_names.get(used)
        walk.items[node] = item
        walk.parent[node] = (origin, Step(path, item.qualname, _how(item, used)))
        walk.via_name[node] = used
        next_level.append(node)
    return next_level


def _target_kind(item: CppItem) -> str:
    """How users reach a definition (CppItem.uses)."""
    if item.kind in ("function", "impl", "meta", "invocation"):
        return f"method:{item.owner}" if item.method else "function"
    if item.kind == "op":
        return "op"
    return "type" if item.kind == "class" else "any"


def _how(item: CppItem, used: str) -> str:
    if item.kind == "registration":
        return f"registers {used} for {item.name} ({item.dispatch_key})"
    if item.kind == "library":
        return f"binds {used}"
    if used in item.dispatched:
        return f"calls at::{used} (the op, through the dispatcher)"
    return f"calls {used}" if used in item.calls else f"uses {used}"


def _terminal(walk: _Walk, node: Node) -> None:
    path, item = node[0], walk.items[node]
    native = walk.native
    names = [item.name] if item.kind in ("function", "declaration", "invocation") else []
    names += list(item.defines) if item.kind in ("impl", "invocation") else []
    for name in names:
        for use in native.kernels.get(name, []):
            walk.add_op(node, use.op, Step(native.path, use.op, use.how))
        if name not in native.kernels:
            walk.result.other_keys.extend(_other(native.other_kernels.get(name, [])))
    if item.kind in ("meta", "invocation"):
        for name in item.defines:
            for use in _metas(native, name):
                walk.add_op(node, use.op, Step(native.path, use.op, use.how))
    if item.kind == "library":
        _library(walk, node, item)
    if path in FUNCTIONS_MANUAL and item.name:
        for op in walk.formulas.calls.get(item.name, []):
            how = f"derivative formula calls {item.name}: {walk.formulas.formulas.get(op, '')}"
            walk.add_op(node, op, Step(walk.formulas.path, op, how), gradient_only=True)


def _metas(native: NativeIndex, name: str) -> list[KernelUse]:
    if name in native.metas:
        return native.metas[name]
    prefix = name + "."
    return [use for key, uses in native.metas.items() if key.startswith(prefix) for use in uses]


def _library(walk: _Walk, node: Node, item: CppItem) -> None:
    namespace = item.qualname.rsplit("::", 1)[-1]
    if "(aten" not in namespace or dispatch_key_other_device(item.dispatch_key):
        if item.dispatch_key:
            walk.result.other_keys.append(f"{item.dispatch_key}: {item.qualname}")
        return
    used = walk.via_name.get(node)
    for op, names in item.impls:
        if used is None or used in names:
            how = f"m.impl({op!r}) for {item.dispatch_key}"
            walk.add_op(node, op, Step(node[0], item.qualname, how))


def _formula_hop(walk: _Walk) -> None:
    """Ops reached by their kernels -> the derivative formulas that call them by name."""
    formulas = walk.formulas
    for reached in list(walk.result.ops):
        if reached.gradient_only:
            continue
        base = reached.op.split(".", 1)[0]
        users = formulas.calls.get(base, []) + formulas.methods.get(base, [])
        for op in users:
            if op.split(".", 1)[0] == base or op in walk.seen_ops:
                continue
            how = f"derivative formula calls {base}: {formulas.formulas.get(op, '')}"
            walk.seen_ops.add(op)
            step = Step(formulas.path, op, how)
            walk.result.ops.append(OpReach(op, (*reached.evidence, step), gradient_only=True))


def _other(uses: list[KernelUse]) -> list[str]:
    return [f"{use.key}: {use.how.split(': ', 1)[-1]} ({use.op})" for use in uses[:3]]


def _merge(old: list[tuple[str, str]], new: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys([*old, *new]))
