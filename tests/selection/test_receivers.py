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


def test_a_call_of_a_standard_module_returning_no_tensor_binds_a_plain_value() -> None:
    """`regx = re.compile(...)` (`torch/_torch_docs.py`'s `regx.split(desc)`) is a Pattern,
    `os.path.join(...)` a str, where the module imports `re` and `os`; not where the function
    rebinds `re`, nor for a module not among them (`copy.deepcopy` may return a tensor)."""
    source = """
    def f(t, desc):
        regx = re.compile("x")
        path = os.path.join("a", "b")
        cloned = copy.deepcopy(t)
        return regx.split(desc), path
    """
    assert _plain_with_modules(source, frozenset({"re", "os"})) == {"regx", "path"}
    assert _plain_with_modules(source, frozenset()) == set()
    rebound = "def f(t, re):\n    regx = re.compile(t)\n"
    assert _plain_with_modules(rebound, frozenset({"re"})) == set()


def _plain_with_modules(source: str, value_modules: frozenset[str]) -> frozenset[str]:
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    return plain_values(function.args, function.body, value_modules, value_modules)


def test_the_modules_a_module_imports_whole_are_the_value_modules_it_names() -> None:
    """`import re`, `import os.path as osp` name standard modules; `from os import path`
    is a name in one, and `import torch` is no such module."""
    chains = _chains(
        """
        import re
        import os.path as osp
        import torch
        from os import path

        def f(desc, t):
            a = re.compile("x")
            b = osp.join("a", "b")
            c = path.join("a", "b")
            d = torch.tensor(1)
            return a.split(desc), b.split("/"), c.split(t), d.split(2)
        """
    )
    assert {("<plain value>", "split"), ("c", "split"), ("d", "split")} <= chains
    assert ("a", "split") not in chains and ("b", "split") not in chains


def test_a_method_of_a_literal_is_called_on_no_tensor() -> None:
    """`"a b".split()`, `[1, 2].index(x)`: the receiver is no name, but plainly no tensor;
    `t.sum().split(2)` may be one, and so may `str(t).split(2)` where `str` is rebound (the
    text rule, selection.links.text_arguments, judges `str(t).split(".")`)."""
    chains = _chains(
        """
        def f(t, x):
            "a b".split()
            [1, 2].index(x)

        def g(t, str):
            t.sum().split(2)
            str(t).split(2)
        """
    )
    assert ("<plain value>", "split") in chains and ("<plain value>", "index") in chains
    assert ("<expr>", "split") in chains


def test_a_calls_text_arguments_are_its_positional_literals_fstrings_and_formats() -> None:
    from selection.python.argument_classes import call_shape, text_positions

    def positions(source: str) -> tuple[int, ...]:
        call = ast.parse(source, mode="eval").body
        assert isinstance(call, ast.Call)
        return text_positions(call_shape(call))

    assert positions("x.split(',')") == (0,)
    assert positions("x.f(1, f'{y}', '%s' % z, b'b', y, sep='-')") == (1, 2, 3)
    assert positions("x.f(t, *rest, 'late')") == ()  # past a *args: positions unknown


def test_only_standard_modules_returning_no_tensor_are_value_modules() -> None:
    from selection.python.summary import Binding, value_module_names

    bindings = {
        "re": Binding("re"),
        "osp": Binding("os.path"),
        "copy": Binding("copy"),
        "functools": Binding("functools"),
        "path": Binding("os", "path"),
    }
    assert value_module_names(bindings) == {"re", "osp"}


def test_a_module_name_a_function_or_an_enclosing_one_rebinds_is_no_module_there() -> None:
    """`def f(time)`: the parameter, not the `time` module; in `inner`, `t` is `outer`'s
    parameter, not `import time as t`; a call's result on such a name is no plain value."""
    chains = _chains(
        """
        import time
        import time as t

        def f(time):
            return time.unsqueeze(-1).expand(3, 4)

        def outer(t):
            def inner():
                y = t.unsqueeze(0)
                return y.expand(3, 4)
            return inner

        def g():
            stamp = time.time()
            return stamp.expand(1)
        """
    )
    assert ("<expr>", "expand") in chains and ("y", "expand") in chains
    assert ("<plain value>", "expand") in chains  # g's `stamp`, a float


def _uses(source: str) -> dict[str, set[tuple[str, ...]]]:
    from selection.python.names import ModuleNames
    from selection.python.summary import summarize

    text = textwrap.dedent(source)
    summary = summarize("torch/m.py", ast.parse(text), text, ModuleNames(["torch/m.py"]))
    return {q: {use.chain for use in uses} for q, uses in summary.uses.items()}


def test_a_module_name_a_function_binds_itself_is_its_local_there() -> None:
    """`check = x > 1` (upstream `_check_strides_helper`): reading `check` is no use of the
    module's `check`; a name imported there (with an assigned fallback) and one declared
    `global` in a nested function are the module's."""
    uses = _uses(
        """
        def check(b, s): ...
        def helper(x): ...

        def strides(a):
            check = a > 1
            if check:
                return check

        def fallback(x):
            try:
                from torch.m import helper
            except ImportError:
                helper = None
            return helper(x)

        def outer(x):
            check = 3
            def inner():
                global check
                return check(x, "s")
            return inner
        """
    )
    assert ("check",) not in uses["strides"]
    assert ("helper",) in uses["fallback"]
    assert ("check",) in uses["outer"]
