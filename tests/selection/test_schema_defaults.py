"""A native_functions.yaml change of an argument's default alone matters where a caller omits
the argument: the recorded map (what each pair dispatched, not how it was called) does not
decide it -- the full mutation run saw `slice.Tensor`'s `dim=0 -> 1` reach 47 % of the scope
through every pair that sliced -- the static links do (the entries testing the op, the
Python code calling it, the backward formulas whose calls omit the argument: a later one
selected 17 % through formula calls passing it)."""

from __future__ import annotations

from pathlib import Path

from selection.links.base import Link, Step, Target
from selection.links.derivatives import derivative_uses
from selection.links.graph import LinkGraph, doubted, older_source_passes, omitting
from selection.links.resolve import _positions
from selection.model import NativeChange
from selection.native_yaml import FUNC_DEFAULTS, FUNC_DEFAULTS_ADDED, diff_entries, parse_entries
from tests.support.observed_runs import linked_ops, recorded_map, select_from, select_head
from tests.support.upstream_repo import UpstreamRepo

NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
SCHEMA = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"


def _change(old: str, new: str) -> NativeChange:
    (change,) = diff_entries(
        "native_functions",
        parse_entries(f"- func: {old}\n", "a.yaml"),
        parse_entries(f"- func: {new}\n", "b.yaml"),
    )
    return change


def _fields(old: str, new: str) -> tuple[str, ...]:
    return _change(old, new).fields


def test_a_schema_whose_defaults_alone_changed_is_told_from_one_whose_arguments_changed() -> None:
    assert _fields(SCHEMA, SCHEMA.replace("alpha=1", "alpha=2")) == (FUNC_DEFAULTS,)
    sliced = (
        "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt step=1) -> Tensor(a)"
    )
    assert _fields(sliced, sliced.replace("start=None", "start=0")) == (FUNC_DEFAULTS,)
    listed = 'avg(Tensor self, int[2] stride=[], str mode="mean") -> Tensor'
    assert _fields(listed, listed.replace("=[]", "=[1, 1]")) == (FUNC_DEFAULTS,)
    assert _fields(SCHEMA, SCHEMA.replace("Scalar alpha", "int alpha")) == ("func",)
    assert _fields(SCHEMA, SCHEMA.replace(", *, Scalar alpha=1", "")) == ("func",)
    # a default removed matters to the callers omitting the argument; one given where there
    # was none to no existing call (each passes it), unless another default changed too
    assert _fields(SCHEMA, SCHEMA.replace("alpha=1", "alpha")) == (FUNC_DEFAULTS,)
    required = "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"
    assert _fields(required, required.replace("index", "index=0")) == (FUNC_DEFAULTS_ADDED,)
    # ... and where no call of another overload can now resolve to this one
    many = parse_entries(
        "- func: sum(Tensor self) -> Tensor\n"
        "- func: sum.dim_IntList(Tensor self, int[1]? dim) -> Tensor\n",
        "a.yaml",
    )
    defaulted = {
        **many,
        "sum.dim_IntList": {"func": "sum.dim_IntList(Tensor self, int[1]? dim=None) -> Tensor"},
    }
    [captures] = diff_entries("native_functions", many, defaulted)
    assert captures.fields == (FUNC_DEFAULTS,) and captures.default_from == 1
    both = "f(Tensor self, int dim, int step=1) -> Tensor"
    assert _fields(both, both.replace("dim,", "dim=0,").replace("step=1", "step=2")) == (
        FUNC_DEFAULTS,
    )


def test_defaults_given_to_required_arguments_affect_nothing() -> None:
    from selection.links.index import LinkIndex
    from selection.links.native_changes import NativeLinks

    required = "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"
    change = _change(required, required.replace("index", "index=0"))
    outcome = NativeLinks().reach(change, LinkIndex.__new__(LinkIndex))
    assert outcome.no_effect.endswith("(every existing call passes them)") and not outcome.links


def _default_from(old: str, new: str) -> int | None:
    return _change(old, new).default_from


def test_a_defaults_change_names_the_first_argument_whose_default_changed() -> None:
    """Counted in schema order with `*` left out, as C++ calls pass them."""
    assert _default_from(SCHEMA, SCHEMA.replace("alpha=1", "alpha=2")) == 2
    sliced = (
        "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt step=1) -> Tensor(a)"
    )
    assert _default_from(sliced, sliced.replace("dim=0", "dim=1")) == 1
    assert _default_from(sliced, sliced.replace("step=1", "step=2")) == 3
    assert _default_from(SCHEMA, SCHEMA.replace("Scalar alpha", "int alpha")) is None
    fft = "fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor"
    assert _default_from(fft, fft.replace("norm=None", 'norm="ortho"')) == 3


def test_a_backward_formula_call_counts_the_arguments_it_passes() -> None:
    """The receiver of a method call is one; braces and nested calls hold commas of their own;
    a call's step keeps the fewest arguments any of the op's formulas pass."""
    entries = {
        "slice_scatter": {"src": "grad.slice_symint(dim, start, end, step)"},
        "cat": {"tensors": "narrow(grad, dim, {sizes[0], sizes[1]}, at::sum(grad, 0))"},
        "mul.Tensor": {"self": "add(grad, other, 2)"},
        "mul.Scalar": {"self": "add(grad, other)"},
        "zeros_like": {"self": "zeros()"},
    }
    aten_ops = {"slice", "narrow", "sum", "add", "zeros"}
    found = derivative_uses(entries, aten_ops, "derivatives.yaml")
    passed = {(op, used.name): step.arguments for op, uses in found.items() for used, step in uses}
    assert passed == {
        ("slice_scatter", "slice"): 5,
        ("cat", "narrow"): 4,
        ("cat", "sum"): 2,
        ("mul", "add"): 2,
        ("zeros_like", "zeros"): 0,
    }


def test_a_call_whose_commas_cannot_be_told_apart_passes_an_unknown_count() -> None:
    """Template arguments, string literals and comments may hold commas: such a call is
    taken to omit anything."""
    entries = {
        "a": {"self": "narrow(grad, std::array<bool, 3>{true, true, true})"},
        "b": {"self": 'narrow(grad, "x, y")'},
        "c": {"self": "narrow(grad, /* dim, start */ 0)"},
    }
    found = derivative_uses(entries, {"narrow"}, "derivatives.yaml")
    assert {op: [step.arguments for _, step in uses] for op, uses in found.items()} == {
        "a": [None],
        "b": [None],
        "c": [None],
    }


def _graph_reaching(*formula_calls: tuple[str, str, int | None]) -> LinkGraph:
    """Entries `opinfo:<op>` dispatching to each op, and (user op, used op, arguments) edges
    of backward formulas."""
    graph = LinkGraph()
    for user, used, arguments in formula_calls:
        for op in (user, used):
            graph.add(Target.entry("opinfo", op), Target.aten(op), "dispatch", Step("db", op, ""))
        graph.add(
            Target.aten(user), Target.aten(used), "derivative", Step("d", user, "", arguments)
        )
    return graph


def _reached(graph: LinkGraph, *changes: tuple[str, int]) -> set[str]:
    links = [
        Link(Target.aten(op), (Step("n", op, "defaults"),), by_call_site=True, default_from=at)
        for op, at in changes
    ]
    return {t.name for t in graph.reach(links, omitting(_positions(links)))}


def test_only_calls_of_the_changed_op_are_judged_by_what_they_pass() -> None:
    """`C`'s formula calls `B` with three arguments, `B`'s calls slice omitting dim: the
    count of `C`'s call is B's, nothing to do with slice's default; a call passing exactly
    as many arguments as the default's position omits it."""
    graph = _graph_reaching(("C", "B", 3), ("B", "slice", 1), ("D", "slice", 2))
    assert _reached(graph, ("slice", 1)) == {"slice", "B", "C"}
    assert _reached(graph, ("slice", 2)) == {"slice", "B", "C", "D"}


def test_several_default_changes_each_judge_the_calls_of_their_own_op() -> None:
    """slice's dim (position 1) and add's alpha (position 2) changed together: mul's
    `add(grad, other)` omits alpha, so mul is reached, whatever slice's position."""
    graph = _graph_reaching(("mul", "add", 2), ("cat", "slice", 5))
    assert _reached(graph, ("slice", 1), ("add", 2)) == {"slice", "add", "mul"}


DERIVATIVES = "torchgen/packaged/autograd/derivatives.yaml"


def _mul_backward_calls_add(upstream: UpstreamRepo, call: str) -> str:
    """A base commit whose derivatives.yaml gives mul a backward formula calling add."""
    upstream.reset()
    upstream.write(
        DERIVATIVES,
        f"- name: mul.Tensor(Tensor self, Tensor other) -> Tensor\n  self: {call}\n  other: grad\n",
    )
    return upstream.commit("mul's backward calls add")


def _default_change_from(upstream: UpstreamRepo, base: str, manifest: Path, tmp_path: Path) -> set:
    upstream.edit(NATIVE, "Scalar alpha=1", "Scalar alpha=2")
    head = upstream.commit("alpha defaults to 2")
    state = select_from(upstream, manifest, base, head, tmp_path, reset=False)
    # what the Map stage reached (the triage then keeps mul's tests only where gradients are
    # computed, which this fixture's templates never do)
    assert state.mapped is not None
    return {
        c.instance.op
        for c in state.mapped.candidates.values()
        if any(cause.stage == "map" and cause.kind != "canary" for cause in c.causes)
    }


def test_a_default_change_reaches_an_op_whose_backward_formula_omits_the_argument(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    base = _mul_backward_calls_add(upstream, "add(grad, other)")
    assert _default_change_from(upstream, base, manifest, tmp_path) >= {"add", "mul"}


def test_control_a_default_change_passes_by_a_backward_formula_passing_the_argument(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`grad.add(other, 3)` passes alpha (the receiver is `self`): mul's gradients do not
    change with alpha's default."""
    base = _mul_backward_calls_add(upstream, "grad.add(other, 3)")
    ops = _default_change_from(upstream, base, manifest, tmp_path)
    assert "add" in ops and "mul" not in ops


def _deps(tmp_path: Path) -> Path:
    """mul's samples dispatched add too (as every pair slicing its inputs dispatches slice)."""
    pairs = [("opinfo", op, d) for op in ("add", "mul") for d in ("float16", "float32")]
    return recorded_map(tmp_path, {}, aten={pair: ["add.Tensor"] for pair in pairs})


def test_a_default_change_reaches_the_entries_testing_the_op_not_every_pair_dispatching_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(NATIVE, "Scalar alpha=1", "Scalar alpha=2")
    state = select_head(upstream, manifest, head, tmp_path, deps=str(_deps(tmp_path)))
    ops = {op for op, _ in linked_ops(state)}
    assert "add" in ops and "mul" not in ops


def test_control_a_kernel_change_reaches_every_pair_the_recording_saw_dispatch_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(NATIVE, "CPU, CUDA: add_kernel", "CPU, CUDA: add_kernel_v2")
    state = select_head(upstream, manifest, head, tmp_path, deps=str(_deps(tmp_path)))
    assert {op for op, _ in linked_ops(state)} >= {"add", "mul"}


def test_a_default_change_reaches_test_code_calling_the_op_eagerly(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """A sample-input function calling `torch.add(x, 1)` omits alpha: its op's tests change
    with the default (though test code calling an op is not a use of its kernel's
    decomposition)."""
    upstream.reset()
    upstream.edit(
        "torch/testing/_internal/common_methods_invocations.py",
        "yield SampleInput(torch.ones(4, device=device, dtype=dtype), args=(3,))",
        "yield SampleInput(torch.add(torch.ones(4, device=device, dtype=dtype), 1), args=(3,))",
    )
    base = upstream.commit("mul's samples call torch.add")
    upstream.edit(NATIVE, "Scalar alpha=1", "Scalar alpha=2")
    head = upstream.commit("alpha defaults to 2")
    pairs = [("opinfo", op, d) for op in ("add", "mul") for d in ("float16", "float32")]
    deps = recorded_map(tmp_path, {}, aten={pair: ["add.Tensor"] for pair in pairs})
    state = select_from(upstream, manifest, base, head, tmp_path, deps=str(deps), reset=False)
    assert {op for op, _ in linked_ops(state)} >= {"add", "mul"}


def test_one_edge_standing_for_several_calls_keeps_the_fewest_arguments_they_pass() -> None:
    """A backward formula passing three arguments and the C++ helper it calls passing one
    make one `derivative` edge: a default at position 1 or 2 reaches through it; an unknown
    count makes it reach for any position."""
    graph = LinkGraph()
    user, used = Target.aten("std_mean"), Target.aten("mean")
    graph.add(user, used, "derivative", Step("derivatives.yaml", "std_mean", "formula", 3))
    graph.add(user, used, "derivative", Step("FunctionsManual.cpp", "var_backward", "", 1))
    [edge] = graph.users[used]
    assert edge.step.arguments == 1 and edge.step.path == "derivatives.yaml"
    assert graph.uses[user] == [edge]
    graph.add(user, used, "derivative", Step("FunctionsManual.cpp", "other", "", None))
    [edge] = graph.users[used]
    assert edge.step.arguments is None and graph.uses[user] == [edge]


# -- a release's library: counts not known, an older source's recorded -----------------------


def _release_graph(older: int | None) -> LinkGraph:
    """`narrow`'s composite kernel calls `slice` as a release's library holds it (an unknown
    count), with `older`: what an older source's calls passed; `select`'s formula calls
    slice passing one argument; `chunk` calls narrow."""
    graph = LinkGraph()
    for op in ("slice", "narrow", "select", "chunk"):
        graph.add(Target.entry("opinfo", op), Target.aten(op), "dispatch", Step("db", op, ""))
    library = Step("libtorch_cpu.so", "at::native::narrow", "calls slice", None, older)
    graph.add(Target.aten("narrow"), Target.aten("slice"), "native-call", library)
    graph.add(Target.aten("select"), Target.aten("slice"), "derivative", Step("d", "select", "", 1))
    graph.add(Target.aten("chunk"), Target.aten("narrow"), "native-call", Step("l", "chunk", ""))
    return graph


def test_a_library_call_an_older_source_passed_the_argument_at_is_a_doubt_not_a_use() -> None:
    """slice's dim (position 1): the older source's narrow passed 5 arguments, so neither
    narrow nor chunk (through narrow) is reached; the edge is listed as a doubt (a canary
    runs narrow's own tests); select's formula omits dim and is reached."""
    graph = _release_graph(older=5)
    assert _reached(graph, ("slice", 1)) == {"slice", "select"}
    [doubt] = doubted(graph, {Target.aten("slice"): 1})
    assert doubt.user == Target.aten("narrow") and doubt.step.older_arguments == 5


def test_control_an_older_source_omitting_the_argument_or_none_recorded_follows_the_call() -> None:
    for older in (1, None):
        graph = _release_graph(older)
        assert _reached(graph, ("slice", 1)) == {"slice", "select", "narrow", "chunk"}, older
        assert doubted(graph, {Target.aten("slice"): 1}) == []


def test_a_known_count_decides_over_an_older_sources() -> None:
    """A call whose count is known (a clone's source, Python) and one only an older source
    counted, made one edge: the fewer of what each is taken to pass; a call neither knows
    makes the edge followed whatever the older source said."""
    graph = LinkGraph()
    user, used = Target.aten("narrow"), Target.aten("slice")
    graph.add(user, used, "native-call", Step("lib", "a", "", None, 5))
    graph.add(user, used, "native-call", Step("src", "b", "", 3))
    [edge] = graph.users[used]
    assert (edge.step.arguments, edge.step.older_arguments) == (None, 3)
    assert not older_source_passes(edge.step, 3) and older_source_passes(edge.step, 2)
    graph.add(user, used, "native-call", Step("lib", "c", "", None))
    [edge] = graph.users[used]
    assert edge.step.older_arguments is None and not older_source_passes(edge.step, 0)


def test_the_tests_nearest_a_caller_are_its_own_else_those_of_its_nearest_users() -> None:
    """narrow has its own entry; `_pad_circular` has none: pad's kernel calls it, and pad's
    entry is the nearest test (chunk's, two levels further through narrow, is not)."""
    graph = _release_graph(older=5)
    graph.add(Target.aten("pad"), Target.aten("_pad_circular"), "native-call", Step("l", "pad", ""))
    graph.add(Target.entry("opinfo", "pad"), Target.aten("pad"), "dispatch", Step("db", "pad", ""))
    graph.add(Target.aten("chunk"), Target.aten("pad"), "native-call", Step("l", "chunk", ""))
    assert graph.nearest_roots(Target.aten("narrow")) == {Target.entry("opinfo", "narrow"): False}
    assert graph.nearest_roots(Target.aten("_pad_circular")) == {
        Target.entry("opinfo", "pad"): False
    }
    assert graph.nearest_roots(Target.aten("unused")) == {}


def test_the_tests_nearest_a_backward_helper_matter_where_gradients_are_computed() -> None:
    """`cumprod_backward` has no entry: cumprod's formula calls it, so cumprod's tests are
    the nearest, through a derivative edge; a root also reached by a plain chain of the same
    length is not narrowed."""
    graph = LinkGraph()
    cumprod, backward = Target.aten("cumprod"), Target.aten("cumprod_backward")
    graph.add(Target.entry("opinfo", "cumprod"), cumprod, "dispatch", Step("db", "cumprod", ""))
    graph.add(cumprod, backward, "derivative", Step("d", "cumprod", ""))
    assert graph.nearest_roots(backward) == {Target.entry("opinfo", "cumprod"): True}
    assert graph.nearest_roots(cumprod, derived=True) == {Target.entry("opinfo", "cumprod"): True}
    graph.add(Target.entry("opinfo", "cumprod"), backward, "callable", Step("db", "ref", ""))
    assert graph.nearest_roots(backward) == {Target.entry("opinfo", "cumprod"): False}
