"""Edits that only add or remove ATen ops in literal lists of ops (selection.python.op_lists):
which are, which ops they reach, and which edits are not."""

from __future__ import annotations

import ast

import pytest

from selection.python.op_lists import op_list_edit, op_reference


def _nodes(source: str) -> list[ast.AST]:
    return list(ast.parse(source).body)


TABLE = """
def core_decompositions():
    return get_decompositions([aten.lerp, aten.linspace.default, torch.ops.aten.add.Tensor])
"""


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("aten.add", "add"),
        ("aten.add.Tensor", "add.Tensor"),
        ("aten.exp.default", "exp"),
        ("torch.ops.aten.lerp", "lerp"),
        ("ops.aten.mul.out", "mul.out"),
        ("prims.add", None),
        ("aten", None),
        ("self.aten.add", None),
        ("aten.add.Tensor.extra", None),
    ],
)
def test_op_references_are_named_as_target_aten_spells_them(text: str, name: str | None) -> None:
    expression = ast.parse(text, mode="eval").body
    assert op_reference(expression) == name


@pytest.mark.parametrize(
    ("edit", "ops"),
    [
        (("aten.lerp, ", "aten.lerp, aten.linalg_vector_norm, "), ("linalg_vector_norm",)),
        (("aten.lerp, ", ""), ("lerp",)),
        (
            ("aten.linspace.default", "aten.linspace.Tensor_step"),
            ("linspace", "linspace.Tensor_step"),
        ),
    ],
)
def test_ops_added_to_or_removed_from_a_list_are_what_the_edit_reaches(
    edit: tuple[str, str], ops: tuple[str, ...]
) -> None:
    assert op_list_edit(_nodes(TABLE), _nodes(TABLE.replace(*edit))) == ops


@pytest.mark.parametrize(
    "edit",
    [
        ("get_decompositions", "get_decompositions_for_export"),  # what reads the list
        ("aten.lerp, ", "aten.lerp, some_helper, "),  # no longer a list of ops only
        ("aten.lerp, aten.linspace.default, ", "aten.linspace.default, aten.lerp, "),  # order
        (
            "[aten.lerp, ",
            "[aten.lerp], [",
        ),  # one list made two
    ],
)
def test_edits_that_change_more_than_which_ops_a_list_holds_are_not_op_list_edits(
    edit: tuple[str, str],
) -> None:
    assert op_list_edit(_nodes(TABLE), _nodes(TABLE.replace(*edit))) == ()


def test_an_op_moved_from_one_list_to_another_reaches_that_op() -> None:
    """Both lists' readers change for that op alone: the decomposition table loses it, the
    fallback set gains it."""
    old = "def f(op):\n    decompose = {aten.a, aten.b}\n    fallback = {aten.c}\n"
    new = "def f(op):\n    decompose = {aten.a}\n    fallback = {aten.c, aten.b}\n"
    assert op_list_edit(_nodes(old), _nodes(new)) == ("b",)  # reaches where b runs, once
    unchanged = "def f(op):\n    decompose = {aten.a, aten.b}\n    fallback = {aten.c}\n"
    assert op_list_edit(_nodes(old), _nodes(unchanged)) == ()


def test_a_list_emptied_or_filled_from_empty_is_not_an_op_list_edit() -> None:
    """`[]` holds no op reference, so it is no op list: the count of lists differs."""
    assert op_list_edit(_nodes("x = [aten.a]"), _nodes("x = []")) == ()
    assert op_list_edit(_nodes("x = []"), _nodes("x = [aten.a]")) == ()
