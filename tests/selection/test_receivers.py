"""Which local names never hold a tensor (selection.python.receivers), so that a method
called on them is not linked to the tensor method or ATen op of its name."""

from __future__ import annotations

import ast
import textwrap

import pytest

from selection.python.receivers import is_value_annotation, plain_values

FUNCTION = """
def f(x, name: str, sizes: list[int], maybe: "Optional[dict[str, int]]", union: str | None,
      dim: int, seq: Sequence[int], t: Tensor, opt: Optional[Tensor], *args, **kwargs):
    seen = set()
    parts = [p for p in name.split(".")]
    label = f"{name}!"
    joined = "-".join(parts)
    formatted = "%s" % name
    table = collections.defaultdict(list)
    counts: dict[str, int] = {}
    y = x.abs()
    mixed = []
    mixed = x
    grown = ""
    grown += x
    for item in sizes:
        pass
    with open(name) as handle:
        pass
    caught = []
    try:
        pass
    except Exception as caught:
        pass

    def inner(z):
        inner_only = set()
        return z
    lambda q: q
    [w for w in sizes]
"""


def test_only_names_every_binding_of_which_is_a_plain_value_are_plain() -> None:
    function = ast.parse(textwrap.dedent(FUNCTION)).body[0]
    assert isinstance(function, ast.FunctionDef)
    plain = plain_values(function.args, function.body)
    assert plain == {
        "name", "sizes", "maybe", "union", "args", "kwargs", "seen", "parts", "label",
        "joined", "formatted", "table", "counts",
    }  # fmt: skip
    # numbers may be 0-dim tensors or SymInts, Sequence[int] a tensor; a tensor is a tensor;
    # a name bound once otherwise, augmented, a loop or `with` target, an exception
    assert not plain & {"dim", "seq", "t", "opt", "x", "y", "mixed", "grown", "item", "handle"}
    assert "caught" not in plain
    # the nested function's, the lambda's and the comprehension's names are their own
    assert not plain & {"inner", "inner_only", "z", "q", "w"}


@pytest.mark.parametrize(
    ("annotation", "plain"),
    [
        ("str", True),
        ("List[str]", True),
        ("dict[str, Tensor]", True),
        ("Optional[str]", True),
        ("Union[str, bytes, None]", True),
        ("'tuple[int, ...]'", True),
        ("str | None", True),
        ("Optional[Tensor]", False),
        ("Union[str, Tensor]", False),
        ("int", False),
        ("Any", False),
        ("Iterable[str]", False),
        ("Callable[[int], int]", False),
    ],
)
def test_a_value_annotation_names_only_containers_strings_and_none(
    annotation: str, plain: bool
) -> None:
    assert is_value_annotation(ast.parse(annotation, mode="eval").body) is plain
