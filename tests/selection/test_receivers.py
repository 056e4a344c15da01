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


def _plain(source: str, module_names: frozenset[str] = frozenset()) -> frozenset[str]:
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    return plain_values(function.args, function.body, module_names)


def test_a_builtin_the_function_or_its_module_rebinds_builds_no_plain_value() -> None:
    """`sorted` of its own (`cuda/_memory_viz.py` nests a `format`, `hub.py` defines `list`)
    may return a tensor."""
    own = "def f(t):\n    sorted = make\n    y = sorted(t)\n    z = list(t)\n"
    assert _plain(own) == {"z"}
    assert _plain(own, module_names=frozenset({"list"})) == set()


def test_only_text_formats_with_percent() -> None:
    """`"%s" % x` is a str; `1 % t` is `t.__rmod__(1)`, a tensor."""
    assert _plain("def f(t):\n    a = '%s' % t\n    b = 1 % t\n    c = f'{t}' % t\n") == {"a", "c"}


def test_a_name_a_nested_function_declares_nonlocal_may_hold_anything() -> None:
    source = """
    def f(t):
        acc = []
        seen = set()
        def g():
            def h():
                nonlocal acc
                acc = t.clone()
            h()
        g()
    """
    assert _plain(source) == {"seen"}


def _chains(source: str) -> set[tuple[str, ...]]:
    from selection.python.names import ModuleNames
    from selection.python.summary import summarize

    text = textwrap.dedent(source)
    summary = summarize("torch/m.py", ast.parse(text), text, ModuleNames(["torch/m.py"]))
    return {use.chain for uses in summary.uses.values() for use in uses if use.how == "call"}


def test_a_comprehensions_targets_are_its_own_names() -> None:
    """`name` is a str in `f`, but the comprehension's `name` is each tensor."""
    chains = _chains(
        """
        def f(tensors, name: str, *args):
            name.split(".")
            kept = [name.abs() for name in tensors]
            total = sum(args.sum() for args in tensors)
            args.index(1)
            return kept, total
        """
    )
    assert ("<plain value>", "split") in chains and ("<plain value>", "index") in chains
    assert ("name", "abs") in chains and ("args", "sum") in chains
    assert ("<plain value>", "abs") not in chains and ("<plain value>", "sum") not in chains
