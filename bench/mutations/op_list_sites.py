"""Sites of the `op-list` kind: a literal list of ATen ops in a library function's body. Pure.

The change drops one op from the list (`[aten.lerp, aten.linspace]` -> `[aten.linspace]`):
a decomposition table no longer takes it, a branch for those ops no longer runs for it, a
loop no longer registers it. Lists in decorators are left out: they run when torch is
imported, so the ground truth would have to run every in-scope pair (the registration kinds
mutate registered functions already). Truth by execution, as for the other function kinds.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from functools import partial

from mutations.edits import Edit, lines_of, span
from mutations.model import EXECUTION, Site, TruthSpec
from mutations.operators import Change
from mutations.sites import FunctionNode, functions_in, parse_module
from selection.python.op_lists import is_op_literal, op_reference, table_uses

OP_LIST = "op-list"
# where torch keeps tables of ops that the reference device's paths read
FILES = (
    "torch/_decomp/__init__.py",
    "torch/_decomp/decompositions.py",
    "torch/_meta_registrations.py",
    "torch/_refs/__init__.py",
    "torch/_subclasses/fake_impls.py",
    "torch/_functorch/partitioners.py",
    "torch/_prims_common/__init__.py",
)
_SEQUENCES = (ast.List, ast.Tuple, ast.Set)


def op_lists_in(node: FunctionNode) -> Iterator[ast.List | ast.Tuple | ast.Set]:
    """The body's op lists (selection.python.op_lists) of two or more ops, three for a
    tuple (dropping one of two leaves `(aten.b)`, no tuple), not the decorators'."""
    for statement in node.body:
        tables = table_uses(statement)
        for inner in ast.walk(statement):
            if id(inner) in tables and is_op_literal(inner):
                assert isinstance(inner, _SEQUENCES)
                if len(inner.elts) >= (3 if isinstance(inner, ast.Tuple) else 2):
                    yield inner


def _drops(node: FunctionNode, lines: Sequence[str]) -> list[Change]:
    changes: list[Change] = []
    for literal in op_lists_in(node):
        for index, element in enumerate(literal.elts):
            # the element and the separator after it (or before it, for the last one)
            if index + 1 < len(literal.elts):
                start, end = element, literal.elts[index + 1]
                line, col, _, _ = span(start, lines)
                end_line, end_col, _, _ = span(end, lines)
            else:
                _, _, end_line, end_col = span(element, lines)
                _, _, line, col = span(literal.elts[index - 1], lines)
            edit = Edit(line, col, end_line, end_col, "")
            name = op_reference(element)
            changes.append(
                Change(
                    "drop-op", element.lineno, (edit,), f"aten.{name} dropped from a list of ops"
                )
            )
    return changes


def op_list_sites(sources: Mapping[str, str]) -> Iterator[Site]:
    for path in FILES:
        text = sources.get(path)
        tree = parse_module(text) if text is not None else None
        if tree is None:
            continue
        lines = lines_of(text or "")
        for qualname, node in functions_in(tree):
            if any(True for _ in op_lists_in(node)):
                group = "registered" if node.decorator_list else "function"
                yield Site(
                    OP_LIST,
                    group,
                    path,
                    qualname,
                    TruthSpec(EXECUTION),
                    partial(_drops, node, lines),
                )
