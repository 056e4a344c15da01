"""Which functions defined inside a function run while it runs. Pure over its body.

A function's nested definitions run when they are called, not where they are defined: a
factory's `_fn` runs when the function it returns is called (at test time), so what `_fn`
calls is one level deeper than what the factory calls (summary.Use.nesting). A nested
function the body calls itself (`helper(tree, leaves)`), or hands to a plain call as a
callback (`tree_map_(register, op)`), runs in place. One that is only returned, decorated,
or handed to a decorator's application (`register_decomposition(op)(_ref)`) does not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def runs_in_place(body: Sequence[ast.AST]) -> frozenset[str]:
    """The names of the functions defined in `body` (in its blocks too, not in functions
    nested deeper) that it calls or passes to a plain call."""
    defined: set[str] = set()
    found: set[str] = set()
    for node in _walk_own(body):
        if isinstance(node, FUNCTION_DEFS):
            defined.add(node.name)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                found.add(node.func.id)
            if is_plain_call(node):
                found.update(a.id for a in _arguments(node) if isinstance(a, ast.Name))
    return frozenset(found & defined)


def is_plain_call(call: ast.Call) -> bool:
    """A call of a named callable, not of what another call returned (`factory(op)(fn)`
    applies a decorator: the function it is given is registered, not run)."""
    return not isinstance(call.func, ast.Call)


def _arguments(call: ast.Call) -> Iterator[ast.expr]:
    yield from call.args
    yield from (k.value for k in call.keywords)


def _walk_own(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """The body's nodes, without entering the functions and lambdas it defines (a function
    definition itself is yielded; its decorators and defaults run here but call nothing
    defined inside)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*FUNCTION_DEFS, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
