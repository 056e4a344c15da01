"""Edits confined to a function defined inside another (a factory's closure), with a recorded
map: the recording names nested functions apart (spyre_ci.deps.symbols), so such an edit
reaches only the pairs that ran that closure, while an edit of the factory's own code reaches
every pair that ran anything it built."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from selection.python.nested import confined_to_nested
from tests.support.observed_runs import (
    linked_ops,
    manifest_file,
    recorded_map,
    select_head,
    upstream_replacing,
)
from tests.support.upstream_repo import INTERNAL, UpstreamRepo

DB = f"{INTERNAL}/common_methods_invocations.py"

FACTORY = """

def _sample_factory(kind):
    def ones(op_info, device, dtype):
        yield SampleInput(torch.ones(3, device=device, dtype=dtype), args=(2,))

    def zeros(op_info, device, dtype):
        yield SampleInput(torch.zeros(4, device=device, dtype=dtype), args=(3,))

    return ones if kind == "ones" else zeros


sample_inputs_add = _sample_factory("ones")
sample_inputs_mul = _sample_factory("zeros")
"""

ADD = [("opinfo", "add", d) for d in ("float16", "float32")]
MUL = [("opinfo", "mul", d) for d in ("float16", "float32")]


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    """add's and mul's sample inputs are two closures of one factory."""
    return upstream_replacing(
        tmp_path_factory.mktemp("upstream"), DB, "def sample_inputs_add(",
        "def sample_inputs_unary(", FACTORY.lstrip("\n") + "\n\n",
        "sample inputs built by a factory",
    )  # fmt: skip


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return manifest_file(tmp_path_factory.mktemp("manifests"))


@pytest.fixture
def deps(tmp_path: Path) -> Path:
    ran = {pair: [f"{DB}::_sample_factory.<locals>.ones"] for pair in ADD}
    ran |= {pair: [f"{DB}::_sample_factory.<locals>.zeros"] for pair in MUL}
    return recorded_map(tmp_path, ran)


def _pairs(ops: set[tuple[str | None, str | None]]) -> set[tuple[str, str, str]]:
    return {("opinfo", op, dtype) for op, dtype in ops if op and dtype}


def test_an_edit_inside_one_closure_reaches_only_the_pairs_that_ran_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, deps: Path
) -> None:
    head = upstream.change(DB, "torch.ones(3, device", "torch.ones(5, device")
    static = _pairs(linked_ops(select_head(upstream, manifest, head, tmp_path)))
    assert set(ADD + MUL) <= static  # statically: whatever the factory built
    observed = _pairs(linked_ops(select_head(upstream, manifest, head, tmp_path, str(deps))))
    assert set(ADD) <= observed and not set(MUL) & observed


def test_an_edit_of_the_factorys_own_code_reaches_every_pair_that_ran_what_it_built(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, deps: Path
) -> None:
    head = upstream.change(DB, 'if kind == "ones"', 'if kind != "zeros"')
    observed = _pairs(linked_ops(select_head(upstream, manifest, head, tmp_path, str(deps))))
    assert set(ADD + MUL) <= observed


def test_a_closure_no_recorded_pair_ran_keeps_its_static_links(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """The recording can rule pairs out only for code it saw run."""
    ran = {pair: [f"{DB}::_sample_factory.<locals>.ones"] for pair in ADD + MUL}
    deps = recorded_map(tmp_path, ran)
    head = upstream.change(DB, "torch.zeros(4, device", "torch.zeros(6, device")
    observed = _pairs(linked_ops(select_head(upstream, manifest, head, tmp_path, str(deps))))
    assert set(ADD + MUL) <= observed


LATE = """def sample_inputs_add(op_info, device, dtype):
    def late(n):
        return torch.ones(n, device=device, dtype=dtype)

    yield SampleInput(torch.ones(3, device=device, dtype=dtype), args=(2,))
    yield SampleInput(late(5), args=(2,))


"""


@pytest.fixture(scope="module")
def late_helper(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    """add's sample function has a helper nested in it, used by its later samples."""
    return upstream_replacing(
        tmp_path_factory.mktemp("upstream"), DB, "def sample_inputs_add(",
        "def sample_inputs_mul(", LATE, "a nested helper in a sample function",
    )  # fmt: skip


def test_pairs_that_ran_the_enclosing_function_are_kept_for_an_edit_of_its_nested_one(
    late_helper: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """The recording caps samples per pair: add/float32 stopped before the sample that calls
    `late`, but its test runs every sample. So an edit of `late` reaches every pair that
    ran `sample_inputs_add` itself, not only those the recording saw run `late`."""
    outer, inner = f"{DB}::sample_inputs_add", f"{DB}::sample_inputs_add.<locals>.late"
    deps = recorded_map(
        tmp_path,
        {ADD[0]: [outer, inner], ADD[1]: [outer]}
        | {pair: [f"{DB}::sample_inputs_mul"] for pair in MUL},
    )
    head = late_helper.change(DB, "torch.ones(n, device", "torch.zeros(n, device")
    observed = _pairs(linked_ops(select_head(late_helper, manifest, head, tmp_path, str(deps))))
    assert set(ADD) <= observed and not set(MUL) & observed


def _defs(source: str) -> list[ast.AST]:
    return [ast.parse(source).body[0]]


OUTER = """
def f(x, scale=2):
    @decorate(1)
    def g(y):
        return y * scale
    if x:
        def h(y):
            return y + 1
    try:
        pass
    except ValueError:
        def k(y):
            return y - 1
    class C:
        def m(self):
            return 3
    return g(x)
"""


@pytest.mark.parametrize(
    ("edit", "confined"),
    [
        (("y * scale", "y * scale * 1.5"), ("f.<locals>.g",)),
        (("y + 1", "y + 2"), ("f.<locals>.h",)),  # defined inside an `if`
        (("return g(x)", "return g(x + 1)"), ()),  # the function's own statement
        (("@decorate(1)", "@decorate(2)"), ()),  # decorators run with the function
        (("def g(y):", "def g(y, z=0):"), ()),  # so do defaults
        (("def h(y)", "def j(y)"), ()),  # another name binds in the function
        (("y - 1", "y - 2"), ("f.<locals>.k",)),  # defined in an `except` handler
        (("return 3", "return 4"), ()),  # a nested class is the function's own code
    ],
)
def test_which_nested_functions_an_edit_is_confined_to(
    edit: tuple[str, str], confined: tuple[str, ...]
) -> None:
    old, new = OUTER, OUTER.replace(*edit)
    assert new != old
    assert confined_to_nested("f", _defs(old), _defs(new)).names == confined


DECORATOR_FACTORY = """
def factory(kind):
    def inner(prim):
        def _ref(a):
            return prim(a) * kind
        register(kind)(_ref)
        return _ref
    def walk(tree):
        return leaf(tree) + 1
    def leaf(tree):
        return tree * 2
    walk(kind)
    return inner
"""


@pytest.mark.parametrize(
    ("edit", "confined", "nesting"),
    [
        # the function the decorator returns returns: two calls away from `factory`
        (("prim(a) * kind", "prim(a) + kind"), ("factory.<locals>.inner.<locals>._ref",), 2),
        # the decorator it returns: it runs when that is applied
        (("register(kind)", "register(kind, 1)"), ("factory.<locals>.inner",), 1),
        # a helper it calls in place runs with it
        (("leaf(tree) + 1", "leaf(tree) + 2"), ("factory.<locals>.walk",), 0),
        # and so does a helper only that helper calls
        (("tree * 2", "tree * 3"), ("factory.<locals>.leaf",), 0),
        (("walk(kind)", "walk(kind + 1)"), (), 0),  # its own code
    ],
)
def test_how_deep_the_code_an_edit_confined_to_nested_functions_runs(
    edit: tuple[str, str], confined: tuple[str, ...], nesting: int
) -> None:
    """What `import torch` runs of a function it calls (selection.links.startup) is its own
    code, and the decorator it returns where that is applied: the depth tells which."""
    found = confined_to_nested(
        "factory", _defs(DECORATOR_FACTORY), _defs(DECORATOR_FACTORY.replace(*edit))
    )
    assert (found.names, found.nesting) == (confined, nesting)
