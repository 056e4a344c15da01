"""A native_functions.yaml change of an argument's default alone matters where a caller omits
the argument: the recorded map (what each pair dispatched, not how it was called) does not
decide it -- the full mutation run saw `slice.Tensor`'s `dim=0 -> 1` reach 47 % of the scope
through every pair that sliced -- the static links do (the entries testing the op, the
Python code calling it)."""

from __future__ import annotations

from pathlib import Path

from selection.native_yaml import FUNC_DEFAULTS, diff_entries, parse_entries
from tests.support.observed_runs import linked_ops, recorded_map, select_head
from tests.support.upstream_repo import UpstreamRepo

NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
SCHEMA = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"


def _fields(old: str, new: str) -> tuple[str, ...]:
    (change,) = diff_entries(
        "native_functions",
        parse_entries(f"- func: {old}\n", "a.yaml"),
        parse_entries(f"- func: {new}\n", "b.yaml"),
    )
    return change.fields


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
    # a default added or removed matters to the same callers: those omitting the argument
    assert _fields(SCHEMA, SCHEMA.replace("alpha=1", "alpha")) == (FUNC_DEFAULTS,)


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
    old_base, upstream.base = upstream.base, base
    try:
        state = select_head(upstream, manifest, head, tmp_path, deps=str(deps))
    finally:
        upstream.base = old_base
    assert {op for op, _ in linked_ops(state)} >= {"add", "mul"}
