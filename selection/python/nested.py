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

from selection.observed import NESTED
from selection.pyast import FUNCTION_DEFS, normalized_fingerprint


def confined_to_nested(qualname: str, old: list[ast.AST], new: list[ast.AST]) -> tuple[str, ...]:
    """The qualnames (`f.<locals>.g`) of the nested functions whose bodies differ, when the
    function's own code is equal; () when its own code changed (or it is not one function)."""
    if len(old) != 1 or len(new) != 1:
        return ()
    before, after = old[0], new[0]
    if not isinstance(before, FUNCTION_DEFS) or not isinstance(after, FUNCTION_DEFS):
        return ()
    old_nested, new_nested = _nested_defs(before), _nested_defs(after)
    if [d.name for d in old_nested] != [d.name for d in new_nested]:
        return ()
    if normalized_fingerprint([_skeleton(before)]) != normalized_fingerprint([_skeleton(after)]):
        return ()
    changed: list[str] = []
    for a, b in zip(old_nested, new_nested, strict=True):
        if normalized_fingerprint([a]) != normalized_fingerprint([b]):
            name = f"{qualname}{NESTED}{a.name}"
            if name not in changed:
                changed.append(name)
    return tuple(changed)


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
