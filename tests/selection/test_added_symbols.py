"""What an added Python function reaches: its users that did not change. A method added to
`Tensor` in Python that shadows an ATen op (2.14's `Tensor.cholesky`, which now raises) is
reached by a call naming it and by what ran that op before; constructing a tensor (a
subclass's construction brings every `Tensor` method) is no use of it. A function only the
new method calls is mapped through that method, not a second time through its users."""

from __future__ import annotations

from pathlib import Path

from selection.state import PipelineState
from tests.support.observed_runs import linked_ops, select_from
from tests.support.sample_helpers import commit_samples_through
from tests.support.upstream_repo import UpstreamRepo

TENSOR = "torch/_tensor.py"
HELPERS = "torch/_wrapping.py"
REMOVED = "torch/_linalg_utils.py"

BASE_TENSOR = """import torch


class Tensor(torch._C.TensorBase):
    def __deepcopy__(self, memo):
        return self.clone()
"""
WRAPPING = """from torch._tensor import Tensor


def wrap(x):
    return Tensor(x)


def absolute(x):
    if x is None:
        raise ValueError("no tensor")
    return x.abs()
"""
# the head's new method: `x.abs()` ran ATen abs; now it runs Python that raises
SHADOWING = """
    def abs(self):
        from torch._linalg_utils import abs_removed

        return abs_removed(self)
"""


def _select(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, reworded: bool = False
) -> PipelineState:
    """`reworded`: the head also rewords `absolute`'s error (a failing-path-only change)."""
    # add's samples construct a Tensor; mul's call library code that calls the method by name
    base = commit_samples_through(
        upstream,
        {TENSOR: BASE_TENSOR, HELPERS: WRAPPING},
        "torch._wrapping",
        {"add": "wrap", "mul": "absolute"},
    )
    upstream.write(TENSOR, BASE_TENSOR + SHADOWING)
    upstream.write(REMOVED, 'def abs_removed(x):\n    raise RuntimeError("abs was removed")\n')
    if reworded:
        upstream.edit(HELPERS, '"no tensor"', '"expected a tensor"')
    head = upstream.commit("Tensor.abs removed")
    return select_from(upstream, manifest, base, head, tmp_path)


def test_a_tensor_method_added_over_an_aten_op_reaches_its_callers_and_that_op(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = _select(upstream, manifest, tmp_path)
    ops = {op for op, _ in linked_ops(state)}
    assert ops == {"mul", "abs"}  # mul names it, abs's OpInfo ran ATen abs; add only wraps
    causes = {
        cause.summary
        for c in state.candidates.values()
        for cause in c.causes
        if cause.stage == "map" and c.instance.op == "abs"
    }
    assert any("Tensor.abs" in summary for summary in causes), causes


def test_a_function_only_the_new_method_calls_is_mapped_through_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = _select(upstream, manifest, tmp_path)
    assert state.mapped is not None
    [said] = [n for n in state.mapped.no_effect if "abs_removed added" in n]
    assert "only code mapped on its own uses it: Tensor.abs (changed too)" in said
    assert not state.blind_spots


def test_a_caller_changed_only_on_failing_paths_does_not_stand_for_the_new_method(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`absolute`'s reworded error reaches only tests that handle errors; the new method it
    calls on its other path still reaches mul's tests through it."""
    state = _select(upstream, manifest, tmp_path, reworded=True)
    assert {op for op, _ in linked_ops(state)} == {"mul", "abs"}


def test_a_shadowing_method_nothing_calls_yet_reaches_what_ran_its_op(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    upstream.reset()
    upstream.write(TENSOR, BASE_TENSOR)
    base = upstream.commit("a Python Tensor class")
    upstream.write(TENSOR, BASE_TENSOR + '\n    def abs(self):\n        raise RuntimeError("x")\n')
    head = upstream.commit("Tensor.abs raises")
    state = select_from(upstream, manifest, base, head, tmp_path)
    assert {op for op, _ in linked_ops(state)} == {"abs"}
