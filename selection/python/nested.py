"""Which functions defined inside a changed function an edit is confined to. Pure.

`spyre-ci deps record` names a nested function by its own qualname
(`_make_prim.<locals>._prim_impl`, see spyre_ci.deps.symbols), so when only such a function's
body changed, the recording can tell the pairs that ran it from those that only ran the
function around it. The enclosing function's own code -- its statements, and each nested
definition's decorators, defaults and annotations, which run when it runs -- must be equal for
the edit to count as confined; anything else is a change of the whole function.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from selection.observed import NESTED
from selection.pyast import FUNCTION_DEFS, Fingerprint, normalized_fingerprint
from selection.python.nesting import runs_in_place


@dataclass(frozen=True)
class Confined:
    """Where in a changed function its edit lies."""

    # The innermost functions defined inside it that the edit is confined to, by the
    # recorder's names (`f.<locals>.g.<locals>.h`); empty: the function's own code changed.
    names: tuple[str, ...] = ()
    # How deep the shallowest changed code runs: 0 when the function runs (its own code,
    # or a nested helper it calls in place: selection.python.nesting), 1 when a function it
    # defines is called (one it returns or registers), ...
    nesting: int = 0


def confined_to_nested(
    qualname: str,
    old: list[ast.AST],
    new: list[ast.AST],
    fingerprint: Fingerprint = normalized_fingerprint,
) -> Confined:
    """The nested functions whose bodies differ, innermost first found, when the code around
    them is equal (the function's own code, and each enclosing nested function's own code);
    Confined() when its own code changed (or it is not one function). `fingerprint`: the
    symbol's comparison (Symbol.fingerprinter)."""
    if len(old) != 1 or len(new) != 1:
        return Confined()
    before, after = old[0], new[0]
    if not isinstance(before, FUNCTION_DEFS) or not isinstance(after, FUNCTION_DEFS):
        return Confined()
    return _confined(qualname, before, after, 0, fingerprint) or Confined()


def _confined(
    qualname: str,
    before: ast.FunctionDef | ast.AsyncFunctionDef,
    after: ast.FunctionDef | ast.AsyncFunctionDef,
    depth: int,
    fingerprint: Fingerprint,
) -> Confined | None:
    """None when `before`'s own code differs from `after`'s (`depth`: how deep it runs)."""
    old_nested, new_nested = _nested_defs(before), _nested_defs(after)
    if [d.name for d in old_nested] != [d.name for d in new_nested]:
        return None
    if fingerprint([_skeleton(before)]) != fingerprint([_skeleton(after)]):
        return None
    in_place = runs_in_place(before.body)
    names: list[str] = []
    nesting: int | None = None
    for a, b in zip(old_nested, new_nested, strict=True):
        if fingerprint([a]) == fingerprint([b]):
            continue
        name = f"{qualname}{NESTED}{a.name}"
        level = depth if a.name in in_place else depth + 1
        inner = _confined(name, a, b, level, fingerprint)
        if inner is None or not inner.names:  # its own code changed
            inner = Confined((name,), level)
        names += inner.names
        nesting = inner.nesting if nesting is None else min(nesting, inner.nesting)
    return Confined(tuple(dict.fromkeys(names)), nesting or 0)


def _nested_defs(function: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions defined directly in `function`'s body (inside `if`/`for`/`with`/`try`/
    `except`/`match` blocks too; not those of a nested class, nor functions nested deeper),
    in source order."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCTION_DEFS):
                found.append(child)
            elif not isinstance(child, (ast.expr, ast.ClassDef)):
                visit(child)

    visit(function)
    return found


def _skeleton(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
    """`function` with each nested function's body replaced by `pass` (what is left is what
    the enclosing function itself runs)."""
    shell = copy.deepcopy(function)
    for nested in _nested_defs(shell):
        nested.body = [ast.Pass()]
    return shell
