"""Mutations inside a branch a parameter's value decides. Pure.

Library code implementing ops branches on what it was passed: `if dtype is None:`,
`if out is not None:`, `if isinstance(dim, int):`, `if callable(message):`. An edit inside
such a branch changes the function only for some values of that parameter, and selection
may then pass over the calls that never pass them (selection.links.argument_reach). These
sites put the edit there, so that execution tells whether a call that does reach it was
passed over. The reading here is the benchmark's own (not selection's): an `if` whose test
asks `is None` / `is not None` / `isinstance` / `callable` of one of the function's own
parameters, alone or inside `and`/`or`/`not`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from functools import partial

from mutations.edits import lines_of
from mutations.model import EXECUTION, Site, TruthSpec
from mutations.operators import Change, branch_changes
from mutations.sites import FunctionNode, functions_in, kind_of, left_alone, parse_module

KIND = "value-branch"
# The library files whose functions implement ops (not test code, not Tensor's methods).
_IMPLEMENTING = ("decomposition", "meta", "python-ref", "nn-functional", "functional")


def value_branch_sites(sources: Mapping[str, str]) -> Iterator[Site]:
    """A site per (function, branch a parameter's value decides), grouped by the question."""
    for path in sorted(sources):
        if kind_of(path) not in _IMPLEMENTING or not path.endswith(".py"):
            continue
        tree = parse_module(sources[path])
        if tree is None:
            continue
        lines = lines_of(sources[path])
        for qualname, function in functions_in(tree):
            for question, branch in _branches(function):
                changes = partial(_changes, branch, lines)
                yield Site(KIND, question, path, qualname, TruthSpec(EXECUTION), changes)


def _branches(function: FunctionNode) -> list[tuple[str, list[ast.stmt]]]:
    """(the question, the statements it decides) of each `if` on a parameter's value,
    another device's branches and `__torch_function__` dispatch left out."""
    params = {a.arg for a in (*function.args.posonlyargs, *function.args.args)}
    params |= {a.arg for a in function.args.kwonlyargs}
    found: list[tuple[str, list[ast.stmt]]] = []
    for node in ast.walk(function):
        if not isinstance(node, ast.If) or left_alone(node):
            continue
        question = _question(node.test, params)
        if question is None:
            continue
        for branch in (node.body, node.orelse):
            if branch and not isinstance(branch[0], ast.If):  # an `elif` is its own `if`
                found.append((question, branch))
    return found


def _question(test: ast.expr, params: set[str]) -> str | None:
    """What the test asks of a parameter: none-test, isinstance or callable; None when it
    asks nothing of one."""
    if isinstance(test, ast.BoolOp):
        asked = [_question(v, params) for v in test.values]
        return next((a for a in asked if a is not None), None)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _question(test.operand, params)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        sides = (test.left, test.comparators[0])
        none = any(isinstance(s, ast.Constant) and s.value is None for s in sides)
        named = any(isinstance(s, ast.Name) and s.id in params for s in sides)
        if none and named and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            return "none-test"
        return None
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.args:
        first = test.args[0]
        if test.func.id in ("isinstance", "callable") and isinstance(first, ast.Name):
            return test.func.id if first.id in params else None
    return None


def _changes(branch: Sequence[ast.stmt], lines: Sequence[str]) -> list[Change]:
    return branch_changes(list(branch), lines)
