"""A derivative change reaches only templates that compute gradients: the agent says
"not needed" for the others, with its reason, and they leave the selection."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from selection import gradients
from selection.gradients import callable_index, computes_gradients
from selection.pyast import module_symbols
from tests.selection.conftest import Select, ids
from tests.support.upstream_repo import (
    MUL_KERNEL_EDIT,
    UpstreamRepo,
    build_upstream,
    write_manifest,
)

HELPERS = """
class Base:
    def _check_grads(self, out):
        out.sum().backward()


class TestCommon(Base):
    def test_forward(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            self.assertEqual(op(sample.input), op(sample.input))

    def test_requires_grad_kwarg(self, device, dtype, op):
        op.sample_inputs(device, dtype, requires_grad=True)

    def test_asks_for_no_gradients(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype, requires_grad=False):
            op(sample.input)

    def test_forward_ad(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype, requires_grad=False):
            with fwAD.dual_level():
                op(fwAD.make_dual(sample.input, sample.input.clone()))

    def test_asks_as_told(self, device, dtype, op, flag=False):
        op.sample_inputs(device, dtype, requires_grad=flag)

    def test_helper_in_a_base_class(self, device, dtype, op):
        self._check_grads(op(1))

    def test_module_function(self, device, dtype, op):
        _run(op)

    def test_by_string(self, device, dtype, op):
        getattr(op(1), "backward")()


def _run(op):
    return torch.autograd.grad(op(1), [])
"""


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("test_forward", False),
        ("test_requires_grad_kwarg", True),
        ("test_asks_for_no_gradients", False),
        ("test_forward_ad", True),
        ("test_asks_as_told", True),
        ("test_helper_in_a_base_class", True),
        ("test_module_function", True),
        ("test_by_string", True),
    ],
)
def test_a_template_computes_gradients_if_it_or_a_helper_of_its_file_does(
    template: str, expected: bool
) -> None:
    symbols = module_symbols(ast.parse(textwrap.dedent(HELPERS)), "")
    found = computes_gradients(symbols[f"TestCommon.{template}"], callable_index(symbols))
    assert found is expected


def test_each_symbol_is_read_once_however_many_templates_reach_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    symbols = module_symbols(ast.parse(textwrap.dedent(HELPERS)), "")
    callables = callable_index(symbols)
    walked: list[int] = []
    real = gradients._identifiers

    def counting(nodes: list[ast.AST]) -> set[str]:
        walked.append(id(nodes))
        return real(nodes)

    monkeypatch.setattr(gradients, "_identifiers", counting)
    templates = [s for q, s in symbols.items() if "test_" in q]
    for _ in range(2):  # the second reading walks nothing again
        answers = [computes_gradients(s, callables) for s in templates]
        assert answers == [False, True, False, True, True, True, True, True]
    assert len(walked) == len(set(walked))


def test_a_template_whose_body_was_not_seen_is_not_known() -> None:
    assert computes_gradients(None, {}) is None


GRAD_TEMPLATE = """
    @ops(op_db)
    def test_grad(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype, requires_grad=True):
            op.op(sample.input, *sample.args).sum().backward()

    @ops(op_db)
    def test_out(self, device, dtype, op):"""

DERIVATIVES = "tools/autograd/derivatives.yaml"
MUL_DERIVATIVE = """
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    """The shared upstream plus a template that computes gradients and derivatives.yaml."""
    repo = build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")
    repo.edit(
        "test/test_ops.py",
        "\n    @ops(op_db)\n    def test_out(self, device, dtype, op):",
        GRAD_TEMPLATE,
    )
    repo.write(DERIVATIVES, MUL_DERIVATIVE)
    repo.base = repo.commit("a gradient template and derivatives.yaml")
    return repo


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_manifest(tmp_path_factory.mktemp("manifests"), also=("TestCommon::test_grad",))


def test_a_derivative_change_runs_only_the_templates_that_compute_gradients(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(DERIVATIVES, "mul_tensor_backward(grad, other,", "grad * other.conj(),")
    state = select(head)
    assert ids(state) == {"test_grad_mul_spyre_float16", "test_grad_mul_spyre_float32"}
    dropped = {d.node_id.rsplit("::", 1)[-1]: d.reason for d in state.dropped}
    assert set(dropped) >= {"test_out_mul_spyre_float16", "test_out_mul_spyre_float32"}
    assert "these templates compute none" in dropped["test_out_mul_spyre_float32"]
    decisions = {
        (g.gradient_free, g.cause.summary.endswith("(templates that compute no gradients)")): (
            g.verdict.decision if g.verdict else None
        )
        for g in state.groups
    }
    assert decisions == {(True, True): "not_needed", (False, False): "run"}


def test_a_kernel_change_still_runs_the_forward_only_templates(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(*MUL_KERNEL_EDIT)
    state = select(head)
    assert {"test_out_mul_spyre_float32", "test_grad_mul_spyre_float32"} <= ids(state)
    assert all(g.verdict is not None and g.verdict.decision == "run" for g in state.groups)


def test_a_forward_only_test_another_change_reaches_too_still_runs(
    upstream: UpstreamRepo, select: Select
) -> None:
    upstream.reset()
    upstream.edit(DERIVATIVES, "mul_tensor_backward(grad, other,", "grad * other.conj(),")
    upstream.edit(*MUL_KERNEL_EDIT)
    state = select(upstream.commit("mul's derivative and its kernel"))
    assert {"test_out_mul_spyre_float32", "test_grad_mul_spyre_float32"} <= ids(state)
    dropped = {d.node_id.rsplit("::", 1)[-1]: d.reason for d in state.dropped}
    assert "test_out_mul_spyre_float32" not in dropped
