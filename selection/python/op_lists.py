"""Whether an edit only adds ATen ops to, or removes them from, lists of ops. Pure.

Library code keeps tables of ops as literals: the ops a decomposition table takes
(`get_decompositions([aten.lerp, aten.linspace, ...])`), the ops a branch is for
(`if func in (aten.add.Tensor, aten.mul.Tensor):`), the ops a loop registers. Such a table is
read by looking an op up in it, so adding `aten.linalg_vector_norm` changes what happens
where that op runs, not everywhere the function holding the list runs (every traced test,
for a decomposition table built on first use).

An *op list* is a list, tuple or set literal whose elements are all ATen op references:
`aten.x`, `aten.x.overload`, `torch.ops.aten.x[.overload]` (`aten` being torch's conventional
alias of `torch.ops.aten`). Two revisions of a symbol are an op-list edit when they are equal
once every op list's elements are left out, have as many op lists in the same order, and
differ in the ops of at least one: the edit reaches the ops that one of them gains or loses,
by the ATen names `Target.aten` spells (`linalg_vector_norm`: any overload; `add.Tensor`).
An op moved from one list to another is one such op (each list's reader changes for it
alone). Anything else is not an op-list edit: a reordered list, a list that becomes
empty or is made from `[]`, an element that is not an op, any other edit beside.
The caller asks only about library functions and methods: test code's op lists decide
which tests exist, and a module-level table is reached through the functions reading it.
"""

from __future__ import annotations

import ast
import copy
from collections import Counter

from selection.pyast import normalized_fingerprint

_SEQUENCES = (ast.List, ast.Tuple, ast.Set)


def op_reference(node: ast.expr) -> str | None:
    """`aten.add.Tensor` -> "add.Tensor", `torch.ops.aten.lerp` -> "lerp",
    `aten.exp.default` -> "exp"; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    dotted = list(reversed(parts))
    for prefix in (["aten"], ["torch", "ops", "aten"], ["ops", "aten"]):
        rest = dotted[len(prefix) :]
        if dotted[: len(prefix)] == prefix and 1 <= len(rest) <= 2:
            if len(rest) == 2 and rest[1] == "default":
                rest = rest[:1]
            return ".".join(rest)
    return None


def _op_lists(nodes: list[ast.AST]) -> tuple[list[ast.AST], list[Counter[str]]]:
    """Copies of the nodes with every op list emptied, and each list's ops, in order."""
    shells = [copy.deepcopy(node) for node in nodes]
    found: list[Counter[str]] = []
    for shell in shells:
        for node in ast.walk(shell):
            if isinstance(node, _SEQUENCES) and node.elts:
                ops = [op_reference(element) for element in node.elts]
                if all(ops):
                    found.append(Counter(op for op in ops if op))
                    node.elts = []
    return shells, found


def op_list_edit(old: list[ast.AST], new: list[ast.AST]) -> tuple[str, ...]:
    """The ops an op-list edit adds or removes (sorted), or () when the two revisions are
    not an op-list edit (see the module docstring)."""
    old_shells, old_lists = _op_lists(old)
    new_shells, new_lists = _op_lists(new)
    if not old_lists and not new_lists:
        return ()
    if normalized_fingerprint(old_shells) != normalized_fingerprint(new_shells):
        return ()
    if len(old_lists) != len(new_lists):
        return ()  # a list emptied to [] or made from [] stays apart from the others
    changed: set[str] = set()
    for before, after in zip(old_lists, new_lists, strict=True):
        changed.update((before - after) | (after - before))
    return tuple(sorted(changed))
