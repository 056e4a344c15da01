"""Which functions defined inside a function run while it runs. Pure over its body.

A function's nested definitions run when they are called, not where they are defined: a
factory's `_fn` runs when the function it returns is called (at test time), so what `_fn`
calls is one level deeper than what the factory calls (summary.Use.nesting). A nested
function the body calls itself (`helper(tree, leaves)`), or hands to a plain call as a
callback (`tree_map_(register, op)`), or puts on a definition as a decorator, runs in
place; so does the constructor of a class the body defines and constructs. One that is only
returned, decorated, or handed to a decorator's application (`register_decomposition(op)(_ref)`)
does not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence

from selection.pyast import FUNCTION_DEFS

# What constructing a class runs of its methods (a local class the code constructs runs
# them in place: selection.python.summary).
CONSTRUCTORS = frozenset({"__new__", "__init__", "__post_init__"})


def runs_in_place(body: Sequence[ast.AST]) -> frozenset[str]:
    """The names of the functions and classes defined in `body` (in its blocks too, not in
    functions nested deeper) that it calls or passes to a plain call (a class called is
    constructed), and those that such a function calls in turn (`unstringify_type`,
    called in place, calls `convert_type_string`)."""
    defined: dict[str, ast.AST] = {}
    for node in _walk_own(body):
        if isinstance(node, (*FUNCTION_DEFS, ast.ClassDef)):
            defined[node.name] = node
    if not defined:
        return frozenset()
    found = _called_in(_walk_own(body)) & defined.keys()
    queue = list(found)
    while queue:
        helper = defined[queue.pop()]
        if isinstance(helper, FUNCTION_DEFS):
            for name in _called_in(_walk_own(helper.body)) & defined.keys() - found:
                found.add(name)
                queue.append(name)
    return frozenset(found)


def _called_in(nodes: Iterable[ast.AST]) -> set[str]:
    """The bare names the code calls, hands to a plain call, or puts on a definition as a
    decorator."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, (*FUNCTION_DEFS, ast.ClassDef)):
            found.update(d.id for d in node.decorator_list if isinstance(d, ast.Name))
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                found.add(node.func.id)
            if is_plain_call(node):
                found.update(a.id for a in call_arguments(node) if isinstance(a, ast.Name))
    return found


def is_plain_call(call: ast.Call) -> bool:
    """A call of a named callable, not of what another call returned (`factory(op)(fn)`
    applies a decorator: the function it is given is registered, not run)."""
    return not isinstance(call.func, ast.Call)


def call_arguments(call: ast.Call) -> list[ast.expr]:
    """A call's arguments, positional then keyword values."""
    return [*call.args, *(k.value for k in call.keywords)]


def _walk_own(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """What runs where `body` runs: its nodes, the functions and classes it defines (each
    yielded, with its decorators and defaults, which run here; a class's body, which runs
    here too, but not its methods' bodies), never entering a function's or lambda's body."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, FUNCTION_DEFS):
            stack.extend(_decorators_and_defaults(node))
        elif isinstance(node, ast.ClassDef):
            stack.extend([*node.decorator_list, *node.bases, *node.keywords])
            for stmt in node.body:
                if isinstance(stmt, FUNCTION_DEFS):  # a method: not callable by its name
                    stack.extend(_decorators_and_defaults(stmt))
                else:
                    stack.append(stmt)
        elif not isinstance(node, ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))


def _decorators_and_defaults(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    defaults = [d for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
    return [*node.decorator_list, *defaults]
