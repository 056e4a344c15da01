"""Whether an edit only adds ATen ops to, or removes them from, tables of ops. Pure.

Library code keeps tables of ops as literals: the ops a decomposition table takes
(`get_decompositions([aten.lerp, aten.linspace, ...])`), the ops a branch is for
(`if func in (aten.add.Tensor, aten.mul.Tensor):`), the ops a loop registers. Such a table is
read by looking an op up in it, so adding `aten.linalg_vector_norm` changes what happens
where that op runs, not everywhere the function holding the list runs (every traced test,
for a decomposition table built on first use).

An *op list* is a list, tuple or set literal whose elements are all ATen op references
(`aten.x`, `aten.x.overload`, `torch.ops.aten.x[.overload]`; `aten` is torch's conventional
alias of `torch.ops.aten`), used as a table: the right side of `in`/`not in`, what a `for`
or comprehension iterates, the only argument of a call (`get_decompositions([...])`,
`@register_meta([...])`) or the value assigned to a name. Anywhere else its positions may
mean something (`return aten.add, aten.sub` unpacked by the caller, `[...][i]`, the values
of a dict, `t == (...)`), and it is no op list.

Two revisions of a symbol are an op-list edit when they are equal once every op list is
replaced by a placeholder, have as many op lists, and each list keeps the order of the ops
it keeps while it gains or loses at least one op overall: the edit reaches the ops gained or
lost, by the ATen names `Target.aten` spells (`linalg_vector_norm`: any overload;
`add.Tensor`). An op moved from one list to another is such an op (each list's reader
changes for it alone). A list reordered, emptied or made from `[]`, an element that is not
an op, any other edit beside: not an op-list edit.

The caller asks only about library functions and methods: test code's op lists decide
which tests exist, and a module-level table is reached through the functions reading it.
"""

from __future__ import annotations

import ast
import copy

from selection.pyast import Fingerprint, normalized_fingerprint

_SEQUENCES = (ast.List, ast.Tuple, ast.Set)
_PLACEHOLDER = "__op_list__"  # never equal to a real `[]`, so lists pair up by position


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


def is_op_literal(node: ast.AST) -> bool:
    """A list, tuple or set literal of one or more op references (whether it is used as a
    table is `table_uses`'s to say)."""
    return (
        isinstance(node, _SEQUENCES)
        and bool(node.elts)
        and all(op_reference(element) for element in node.elts)
    )


def table_uses(root: ast.AST) -> set[int]:
    """The ids of the op literals under `root` that are used as tables (module docstring)."""
    found: set[int] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, (ast.In, ast.NotIn)):
                    found.add(id(right))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            found.add(id(node.iter))
        elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            found.add(id(node.args[0]))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if all(isinstance(t, ast.Name) for t in targets):
                found.add(id(node.value))
    return found


def _op_lists(nodes: list[ast.AST]) -> tuple[list[ast.AST], list[list[str]]]:
    """Copies of the nodes with every op list replaced by a placeholder, and each list's
    ops in order."""
    shells = [copy.deepcopy(node) for node in nodes]
    found: list[list[str]] = []
    for shell in shells:
        tables = table_uses(shell)
        for node in ast.walk(shell):
            if id(node) in tables and is_op_literal(node):
                assert isinstance(node, _SEQUENCES)
                found.append([op for op in map(op_reference, node.elts) if op])
                node.elts = [ast.Name(_PLACEHOLDER)]
    return shells, found


def _has_op_reference(nodes: list[ast.AST]) -> bool:
    return any(
        isinstance(n, ast.Attribute) and op_reference(n) for root in nodes for n in ast.walk(root)
    )


def op_list_edit(
    old: list[ast.AST], new: list[ast.AST], fingerprint: Fingerprint = normalized_fingerprint
) -> tuple[str, ...]:
    """The ops an op-list edit adds ("+cosh") or removes ("-lerp"), sorted by op, or () when
    the two revisions are not an op-list edit (see the module docstring). `fingerprint`:
    the symbol's comparison (Symbol.fingerprinter)."""
    if not _has_op_reference(old) and not _has_op_reference(new):
        return ()
    old_shells, old_lists = _op_lists(old)
    new_shells, new_lists = _op_lists(new)
    if not old_lists or len(old_lists) != len(new_lists):
        return ()
    if fingerprint(old_shells) != fingerprint(new_shells):
        return ()
    changed: set[str] = set()
    for before, after in zip(old_lists, new_lists, strict=True):
        lost, gained = set(before) - set(after), set(after) - set(before)
        kept_before = [op for op in before if op not in lost]
        kept_after = [op for op in after if op not in gained]
        if kept_before != kept_after:
            return ()  # reordered (or a duplicate's count changed)
        changed |= {f"-{op}" for op in lost} | {f"+{op}" for op in gained}
    return tuple(sorted(changed, key=lambda signed: (signed[1:], signed)))


def op_names(signed: tuple[str, ...]) -> list[str]:
    """`("+cosh", "-lerp", "+lerp")` -> `["cosh", "lerp"]`: the ops, once each."""
    return list(dict.fromkeys(op[1:] for op in signed))


def op_list_text(signed: tuple[str, ...]) -> str:
    """`("+cosh", "-lerp")` -> "+aten.cosh, -aten.lerp" (what a cause line says)."""
    return ", ".join(f"{op[0]}aten.{op[1:]}" for op in signed)
