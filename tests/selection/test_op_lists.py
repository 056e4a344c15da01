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
        (("aten.lerp, ", "aten.lerp, aten.linalg_vector_norm, "), ("+linalg_vector_norm",)),
        (("aten.lerp, ", ""), ("-lerp",)),
        (
            ("aten.linspace.default", "aten.linspace.Tensor_step"),
            ("-linspace", "+linspace.Tensor_step"),
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
    assert op_list_edit(_nodes(old), _nodes(new)) == ("+b", "-b")  # where b runs
    unchanged = "def f(op):\n    decompose = {aten.a, aten.b}\n    fallback = {aten.c}\n"
    assert op_list_edit(_nodes(old), _nodes(unchanged)) == ()


def test_a_list_emptied_or_filled_from_empty_is_not_an_op_list_edit() -> None:
    """`[]` holds no op reference, so it is no op list: the count of lists differs."""
    assert op_list_edit(_nodes("x = [aten.a]"), _nodes("x = []")) == ()
    assert op_list_edit(_nodes("x = []"), _nodes("x = [aten.a]")) == ()


def test_an_op_moved_into_a_list_that_was_empty_is_not_paired_with_another_list() -> None:
    """Emptied lists must not pair up with real `[]` literals (the move of `a` is an edit of
    both lists' readers, not nothing)."""
    old = "def f():\n    A = [aten.a]\n    B = []\n    C = [aten.c]\n"
    new = "def f():\n    A = []\n    B = [aten.a]\n    C = [aten.c, aten.d]\n"
    assert op_list_edit(_nodes(old), _nodes(new)) == ()


def test_a_list_reordered_while_it_gains_an_op_is_not_an_op_list_edit() -> None:
    old = "def f(op):\n    return op in [aten.a, aten.b]\n"
    new = "def f(op):\n    return op in [aten.b, aten.a, aten.c]\n"
    assert op_list_edit(_nodes(old), _nodes(new)) == ()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("return aten.add, aten.sub", "return aten.add, aten.mul"),  # unpacked by the caller
        ("return [aten.a, aten.b, aten.c][i]", "return [aten.b, aten.c][i]"),  # positions
        ("return {aten.add: (aten.sub, aten.neg)}", "return {aten.add: (aten.mul, aten.neg)}"),
        ("return t == (aten.a, aten.b)", "return t == (aten.a, aten.c)"),
        ("return alias(aten.add_, [aten.add])", "return alias(aten.add_, [aten.mul])"),
    ],
)
def test_lists_whose_positions_or_context_mean_something_are_not_tables(old: str, new: str) -> None:
    source = "def f(t, i):\n    {}\n"
    assert op_list_edit(_nodes(source.format(old)), _nodes(source.format(new))) == ()


@pytest.mark.parametrize(
    "use",
    [
        "return func in ({ops})",
        "for op in [{ops}]:\n        register(op)",
        "table = {{{ops}}}\n    return table",
        "return get_decompositions([{ops}])",
        "return [op for op in ({ops}) if op]",
    ],
)
def test_lists_used_as_tables_are_op_lists(use: str) -> None:
    source = "def f(func):\n    " + use + "\n"
    old = source.format(ops="aten.a, aten.b.out")
    new = source.format(ops="aten.a, aten.c, aten.b.out")
    assert op_list_edit(_nodes(old), _nodes(new)) == ("+c",)


def test_only_functions_and_methods_of_library_code_are_read_for_op_list_edits() -> None:
    """A module-level table is reached through the functions reading it; test code's op
    lists decide which tests exist."""
    from selection.detect import diff_symbols
    from selection.pyast import module_symbols

    old = "OPS = [aten.a]\n\ndef f(op):\n    return op in (aten.a, aten.b)\n"
    new = "OPS = [aten.a, aten.z]\n\ndef f(op):\n    return op in (aten.a, aten.b, aten.c)\n"

    def changes(path: str) -> dict[str, tuple[str, ...]]:
        before = module_symbols(ast.parse(old), old)
        after = module_symbols(ast.parse(new), new)
        return {c.qualname: c.op_list for c in diff_symbols(path, before, after)}

    assert changes("torch/_decomp/__init__.py") == {"OPS": (), "f": ("+c",)}
    assert changes("torch/testing/_internal/common_ops.py") == {"OPS": (), "f": ()}
