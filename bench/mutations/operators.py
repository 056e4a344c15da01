"""Semantic mutation operators over a function's body. Pure.

Each operator proposes `Change`s that alter what the code does: flip a comparison
(`<` -> `<=`, `==` -> `!=`, `is` -> `is not`, `in` -> `not in`), flip arithmetic (`+` <-> `-`,
`*` <-> `/`) or a boolean operator (`and` <-> `or`), change a constant (an int n -> n + 1,
a float x -> 2x, a bool to its negation), swap a call's first two positional arguments,
negate a condition, drop a statement (replaced by `pass`). Docstrings, decorators,
annotations and defaults are never touched (they are not the body; decorators run at
import), and neither are `raise`/`assert` messages. The caller says which subtrees to leave
alone (`skip`): another device's branches, `__torch_function__` dispatch blocks.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from mutations.edits import Edit, apply_edits, lines_of, replace_node, segment, span

_COMPARE = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
}
_BINARY = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*")}
_BOOL = {ast.And: ("and", "or"), ast.Or: ("or", "and")}
UNDROPPABLE = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Pass,
    ast.Global,
    ast.Nonlocal,
    ast.Import,
    ast.ImportFrom,
)


@dataclass(frozen=True)
class Change:
    operator: str  # flip-compare | flip-arith | flip-bool | constant | swap-args | negate | drop
    line: int
    edits: tuple[Edit, ...]
    description: str


def _end(node: ast.AST, lines: Sequence[str]) -> tuple[int, int]:
    _, _, line, col = span(node, lines)
    return line, col


def _start(node: ast.AST, lines: Sequence[str]) -> tuple[int, int]:
    line, col, _, _ = span(node, lines)
    return line, col


def _token_flip(
    left: ast.AST, right: ast.AST, token: str, new: str, lines: Sequence[str]
) -> Edit | None:
    """Replace the operator token between two operands, when the gap holds only it
    (whitespace and parentheses aside)."""
    start, end = _end(left, lines), _start(right, lines)
    gap = segment(lines, start, end)
    core = " ".join(gap.replace("(", " ").replace(")", " ").split())
    if core != token or "#" in gap:
        return None
    at = gap.find(token.split()[0])
    width = _spaced_width(gap[at:], token) if " " in token else len(token)
    replaced = gap[:at] + new + gap[at + width :]
    return Edit(*start, *end, replaced)


def _spaced_width(tail: str, token: str) -> int:
    """Width of a two-word token (`is not`, `not in`) written with any spacing."""
    first, second = token.split()
    rest = tail[len(first) :]
    return len(first) + (len(rest) - len(rest.lstrip())) + len(second)


def _constant(node: ast.Constant) -> str | None:
    value = node.value
    if isinstance(value, bool):
        return repr(not value)
    if isinstance(value, int):
        return repr(value + 1)
    if isinstance(value, float):
        return repr(value * 2 if value else 1.0)
    return None


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


def _node_changes(node: ast.AST, lines: Sequence[str]) -> Iterator[Change]:
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        old, new = _COMPARE[type(node.ops[0])]
        edit = _token_flip(node.left, node.comparators[0], old, new, lines)
        if edit:
            yield Change("flip-compare", line, (edit,), f"`{old}` -> `{new}`")
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        if not (_is_text(node.left) or _is_text(node.right)):
            old, new = _BINARY[type(node.op)]
            edit = _token_flip(node.left, node.right, old, new, lines)
            if edit:
                yield Change("flip-arith", line, (edit,), f"`{old}` -> `{new}`")
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        old, new = _BOOL[type(node.op)]
        edit = _token_flip(node.values[0], node.values[1], old, new, lines)
        if edit:
            yield Change("flip-bool", line, (edit,), f"`{old}` -> `{new}`")
    elif isinstance(node, ast.Constant) and (text := _constant(node)) is not None:
        old_text = segment(lines, _start(node, lines), _end(node, lines))
        edit = replace_node(node, lines, text)
        yield Change("constant", line, (edit,), f"constant `{old_text}` -> `{text}`")
    elif isinstance(node, ast.Call):
        yield from _swap(node, lines)
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        test = segment(lines, _start(node.test, lines), _end(node.test, lines))
        if "\n" not in test:
            edit = replace_node(node.test, lines, f"not ({test})")
            yield Change("negate", line, (edit,), f"condition `{test}` negated")


def _swap(node: ast.Call, lines: Sequence[str]) -> Iterator[Change]:
    args = node.args
    if len(args) < 2 or any(isinstance(a, ast.Starred) for a in args[:2]):
        return
    first, second = (segment(lines, _start(a, lines), _end(a, lines)) for a in args[:2])
    if first == second or "\n" in first or "\n" in second:
        return
    edits = (replace_node(args[0], lines, second), replace_node(args[1], lines, first))
    yield Change("swap-args", node.lineno, edits, f"arguments `{first}` and `{second}` swapped")


def _drops(
    body: list[ast.stmt],
    lines: Sequence[str],
    skip_first: bool,
    skip: Callable[[ast.AST], bool] = lambda _n: False,
) -> Iterator[Change]:
    statements = body[1:] if skip_first else body
    if len(body) < 2:
        return
    for stmt in statements:
        if isinstance(stmt, UNDROPPABLE) or skip(stmt):
            continue
        first_line = lines[stmt.lineno - 1].strip()
        edit = replace_node(stmt, lines, "pass")
        yield Change("drop", stmt.lineno, (edit,), f"statement `{first_line[:60]}` dropped")


def _has_docstring(body: list[ast.stmt]) -> bool:
    first = body[0] if body else None
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def _walk(node: ast.AST, lines: Sequence[str], skip: Callable[[ast.AST], bool]) -> Iterator[Change]:
    if skip(node) or isinstance(node, (ast.Raise, ast.Assert)):
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if not isinstance(node, ast.Lambda):
            yield from _body(node.body, lines, skip)
        else:
            yield from _walk(node.body, lines, skip)
        return
    if isinstance(node, ast.ClassDef):
        return
    yield from _node_changes(node, lines)
    for name, value in ast.iter_fields(node):
        if name in ("annotation", "returns", "type_comment"):
            continue
        children = value if isinstance(value, list) else [value]
        if name in ("body", "orelse", "finalbody") and all(
            isinstance(c, ast.stmt) for c in children
        ):
            yield from _drops(children, lines, skip_first=False, skip=skip)
        for child in children:
            if isinstance(child, ast.AST):
                yield from _walk(child, lines, skip)


def _body(
    body: list[ast.stmt], lines: Sequence[str], skip: Callable[[ast.AST], bool]
) -> Iterator[Change]:
    docstring = _has_docstring(body)
    yield from _drops(body, lines, skip_first=docstring, skip=skip)
    for stmt in body[1:] if docstring else body:
        yield from _walk(stmt, lines, skip)


def body_changes(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    lines: Sequence[str],
    skip: Callable[[ast.AST], bool] = lambda _n: False,
) -> list[Change]:
    """Every semantic change the operators propose in a function's body, in source order."""
    return sorted(_body(function.body, lines, skip), key=lambda c: (c.line, c.operator))


def branch_changes(branch: list[ast.stmt], lines: Sequence[str]) -> list[Change]:
    """Semantic changes inside one branch's statements (e.g. another device's branch)."""
    found = list(_drops(branch, lines, skip_first=False))
    for stmt in branch:
        found.extend(_walk(stmt, lines, lambda _n: False))
    return sorted(found, key=lambda c: (c.line, c.operator))


def _without_docstrings(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and _has_docstring(body):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree, include_attributes=False)


def code_differs(old: str, new: str) -> bool:
    """The two texts differ as code (docstrings, comments and layout aside)."""
    return _without_docstrings(ast.parse(old)) != _without_docstrings(ast.parse(new))


def _enclosing(tree: ast.Module, edits: Sequence[Edit]) -> ast.stmt | None:
    first, last = min(e.line for e in edits), max(e.end_line for e in edits)
    for stmt in tree.body:
        start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
        if start <= first and last <= (stmt.end_lineno or stmt.lineno):
            return stmt
    return None


def change_differs(text: str, tree: ast.Module, edits: Sequence[Edit]) -> bool:
    """`code_differs` for edits inside one top-level statement, comparing that statement
    only (a database file is a megabyte: parsing it whole per candidate is slow)."""
    stmt = _enclosing(tree, edits)
    if stmt is None:
        return code_differs(text, apply_edits(text, edits))
    start = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
    end = stmt.end_lineno or stmt.lineno
    piece = "\n".join(lines_of(text)[start - 1 : end])
    shifted = [
        Edit(e.line - start + 1, e.col, e.end_line - start + 1, e.end_col, e.text) for e in edits
    ]
    return code_differs(piece, apply_edits(piece, shifted))
