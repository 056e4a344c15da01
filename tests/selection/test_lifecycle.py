"""Library code that the test bases' per-test methods run (`TestCase.setUp`, `tearDown`,
`run`) runs around every reused test: a change to it is the stratified canary over every
test, beside whatever else links it (here a sample-input function that calls it too, which
alone made it look like one op's)."""

from __future__ import annotations

from pathlib import Path

from selection.state import PipelineState
from tests.support.observed_runs import select_from
from tests.support.upstream_repo import INTERNAL, UpstreamRepo

PRECISION = "torch/backends/precision.py"
CALL = "from torch.backends.precision import current_precision\n"


UTILS = f"{INTERNAL}/common_utils.py"


def _head_changing_precision(
    upstream: UpstreamRepo, set_up_calls: bool, samples_call: bool = True, methods: str = ""
) -> tuple[str, str]:
    """(base, head): base has `current_precision()`, called by mul's sample inputs (if
    `samples_call`) and by `TestCase.setUp` (if `set_up_calls`), with `methods` added to
    common_utils.py's TestCase; head changes what it returns."""
    upstream.reset()
    upstream.write(PRECISION, "def current_precision():\n    return 1e-5\n")
    if samples_call:
        database = f"{INTERNAL}/common_methods_invocations.py"
        upstream.write(database, CALL + upstream.read(database))
        upstream.edit(
            database,
            "def sample_inputs_mul(op_info, device, dtype):\n",
            "def sample_inputs_mul(op_info, device, dtype):\n    current_precision()\n",
        )
    upstream.write(UTILS, CALL + upstream.read(UTILS))
    upstream.edit(UTILS, "    def assertClose(", methods + "    def assertClose(")
    if set_up_calls:
        upstream.edit(UTILS, "self.precision = 1e-5", "self.precision = current_precision()")
    base = upstream.commit("a precision helper")
    upstream.edit(PRECISION, "return 1e-5", "return 1e-3")
    return base, upstream.commit("a coarser precision")


def _select(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, calls: bool, **shape: object
) -> PipelineState:
    base, head = _head_changing_precision(upstream, calls, **shape)  # type: ignore[arg-type]
    return select_from(upstream, manifest, base, head, tmp_path)


def _canaries(state: PipelineState) -> set[str]:
    return {
        cause.summary
        for c in state.candidates.values()
        for cause in c.causes
        if cause.stage == "map" and cause.kind == "canary"
    }


def test_a_function_test_set_up_runs_is_the_canary_over_every_test_beside_its_links(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = _select(upstream, manifest, tmp_path, calls=True)
    ops = {c.instance.op for c in state.candidates.values()}
    assert "mul" in ops and len(ops - {"mul"}) > 0  # the canary picks other ops' tests too
    assert any("runs around every test" in summary for summary in _canaries(state))
    assert not state.blind_spots


def test_control_a_function_only_a_sample_input_function_runs_reaches_that_op(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = _select(upstream, manifest, tmp_path, calls=False)
    assert {c.instance.op for c in state.candidates.values()} == {"mul"}
    assert not _canaries(state)


def test_a_function_only_test_set_up_runs_is_the_canary_and_not_said_to_reach_nothing(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = _select(upstream, manifest, tmp_path, calls=True, samples_call=False)
    assert any("runs around every test" in summary for summary in _canaries(state))
    assert state.mapped is not None
    assert not [n for n in state.mapped.no_effect if "no reused instance reaches it" in n]


# `run` builds a TestCase (as 2.14's `_run_custom` does to end a run early): that makes none
# of TestCase's other methods per-test code
CONSTRUCTING = """    def run(self, result=None):
        TestCase()
        return super().run(result)

    def generate_inputs(self):
        return current_precision()

"""


def test_a_test_base_built_by_per_test_code_brings_none_of_its_other_methods(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = _select(
        upstream, manifest, tmp_path, calls=False, samples_call=False, methods=CONSTRUCTING
    )
    assert not any("runs around every test" in summary for summary in _canaries(state))


TENSOR = "torch/_tensor.py"
TENSOR_TEXT = """class Tensor:
    def split(self, split_size, dim=0):
        return [self]
"""


def test_a_tensor_method_named_like_a_string_method_set_up_calls_is_not_per_test_code(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`self.id().split(".")` in `setUp` is linked to `Tensor.split` by name (its receiver's
    type is unknown); no test base runs a tensor method, so a change to `Tensor.split`
    reaches the tests whose samples split a tensor, not every test through the canary."""
    upstream.reset()
    upstream.write(TENSOR, TENSOR_TEXT)
    database = f"{INTERNAL}/common_methods_invocations.py"
    upstream.edit(
        database,
        "def sample_inputs_mul(op_info, device, dtype):\n",
        "def sample_inputs_mul(op_info, device, dtype):\n    torch.ones(4).split(2)\n",
    )
    upstream.edit(UTILS, "self.precision = 1e-5", 'self.precision = len(self.id().split("."))')
    base = upstream.commit("setUp splits the test id; mul's samples split a tensor")
    upstream.edit(TENSOR, "return [self]", "return [self, self]")
    head = upstream.commit("split returns more")
    state = select_from(upstream, manifest, base, head, tmp_path)
    assert not any("runs around every test" in summary for summary in _canaries(state))
    assert {c.instance.op for c in state.candidates.values()} == {"mul"}
