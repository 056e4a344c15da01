"""torch.compile(backend="spyre"): adapters, scratchpad diagnostics, forward, backward, graph
breaks and dynamic shapes, executed on spyre tensors."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import torch_spyre_ref  # noqa: F401
from torch_spyre_ref.compiler import (
    ADAPTERS,
    COMPILE_LOG,
    SCRATCHPAD_BYTES,
    apply_adapters,
    diagnose,
)

aten = torch.ops.aten


@pytest.fixture(autouse=True)
def fresh_compiler() -> Iterator[None]:
    torch._dynamo.reset()
    COMPILE_LOG.clear()
    yield
    torch._dynamo.reset()


def _targets(gm: torch.fx.GraphModule) -> set[object]:
    return {n.target for n in gm.graph.nodes if n.op == "call_function"}


def _adapter_case(fn: Callable[[torch.Tensor], torch.Tensor], removed: object, name: str) -> None:
    x = torch.randn(64, dtype=torch.float32) * 3
    gm = make_fx(fn)(x)
    assert removed in _targets(gm)
    original = gm(x)
    assert apply_adapters(gm) == [name]
    assert removed not in _targets(gm)
    assert aten.mul.Tensor in _targets(gm)
    torch.testing.assert_close(gm(x), original, rtol=1e-6, atol=1e-6)
    on_device = gm(x.to("spyre"))
    assert on_device.device.type == "spyre"
    torch.testing.assert_close(on_device.cpu(), original, rtol=1e-6, atol=1e-6)


def test_pow3_adapter_computes_the_same_values() -> None:
    _adapter_case(lambda x: torch.pow(x, 3.0), aten.pow.Tensor_Scalar, "pow3_to_mul")


def test_tanh_gelu_adapter_computes_the_same_values() -> None:
    def gelu_new(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate="tanh")

    _adapter_case(gelu_new, aten.gelu.default, "tanh_gelu_explicit")


def test_adapters_leave_other_ops_alone() -> None:
    gm = make_fx(lambda x: torch.pow(x, 2.0) + torch.nn.functional.gelu(x))(torch.randn(4))
    assert apply_adapters(gm) == []
    assert {a.name for a in ADAPTERS} == {"pow3_to_mul", "tanh_gelu_explicit"}


def _model(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    hidden = torch.nn.functional.gelu(x @ w, approximate="tanh")
    return (torch.pow(hidden, 3) + hidden).softmax(-1)


def test_forward_and_backward_match_eager_on_device() -> None:
    generator = torch.Generator().manual_seed(0)  # the same inputs on every run
    x, w = torch.randn(8, 16, generator=generator), torch.randn(16, 16, generator=generator)
    dx = x.to("spyre").requires_grad_()
    dw = w.to("spyre").requires_grad_()
    compiled = torch.compile(_model, backend="spyre")
    out = compiled(dx, dw)
    assert out.device.type == "spyre"
    out.sum().backward()
    ex, ew = x.clone().requires_grad_(), w.clone().requires_grad_()
    expected = _model(ex, ew)
    expected.sum().backward()
    torch.testing.assert_close(out.cpu(), expected.detach(), rtol=1e-5, atol=1e-6)
    assert dw.grad is not None and ew.grad is not None
    torch.testing.assert_close(dw.grad.cpu(), ew.grad, rtol=1e-4, atol=1e-5)
    kinds = [g.kind for g in COMPILE_LOG.graphs]
    assert kinds == ["forward", "backward"]
    assert set(COMPILE_LOG.graphs[0].adapters) == {"pow3_to_mul", "tanh_gelu_explicit"}


def test_graph_breaks_compile_each_part() -> None:
    def broken(x: torch.Tensor) -> torch.Tensor:
        y = torch.pow(x, 3) * 2
        torch._dynamo.graph_break()
        return y.relu() + 1

    x = torch.randn(10)
    result = torch.compile(broken, backend="spyre")(x.to("spyre"))
    torch.testing.assert_close(result.cpu(), broken(x))
    assert [g.kind for g in COMPILE_LOG.graphs] == ["forward", "forward"]


@pytest.mark.parametrize("backend", ["spyre", "aot_eager"])
def test_dynamo_converts_only_the_compiled_frame_not_the_devices_python_shims(
    backend: str,
) -> None:
    """Dynamo asks for the current stream while it compiles; on spyre that is Python code
    (torch.accelerator's shims), which Dynamo must skip, whatever the backend, as it does
    other accelerators' C++ bindings: it converted 8 more frames after each reset."""
    from torch._dynamo.utils import counters

    counters.clear()
    x = torch.ones(3, device="spyre", requires_grad=True)
    torch.compile(lambda t: torch.sin(t) * 2, backend=backend)(x).sum().backward()
    assert counters["frames"]["total"] == 1
    assert x.grad is not None
    torch.testing.assert_close(x.grad.cpu(), 2 * torch.cos(torch.ones(3)))


def test_dynamic_shapes_compile_once() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.pow(x, 3).sum(-1)

    compiled = torch.compile(fn, backend="spyre", dynamic=True)
    for rows in (3, 5, 9):
        x = torch.randn(rows, 7)
        torch.testing.assert_close(compiled(x.to("spyre")).cpu(), fn(x))
    assert len(COMPILE_LOG.graphs) == 1


def test_scratchpad_diagnostics_flag_nodes_that_exceed_all_scratchpads() -> None:
    def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a @ b).relu()

    a, b = (torch.empty(4096, 4096, device="meta") for _ in range(2))  # 64 MiB per operand
    gm = make_fx(matmul, tracing_mode="fake")(a, b)
    found = diagnose(gm)
    assert [d.target for d in found] == ["aten.mm.default", "aten.relu.default"]
    assert found[0].working_set_bytes == 3 * 4096 * 4096 * 4 > SCRATCHPAD_BYTES
    assert "32 cores" in str(found[0])
    small = make_fx(matmul, tracing_mode="fake")(torch.empty(64, 64), torch.empty(64, 64))
    assert diagnose(small) == []


def _default_compile_failure(fn: Callable[..., object], *args: object) -> BaseException:
    from torch._dynamo.exc import BackendCompilerFailed

    with pytest.raises(BackendCompilerFailed) as caught:
        torch.compile(fn)(*args)
    return caught.value


@pytest.mark.parametrize(
    "case",
    ["spyre input", "module on spyre", "tensor made on spyre inside"],
)
def test_the_default_backend_refuses_spyre_at_once_naming_backend_spyre(case: str) -> None:
    from torch_spyre_ref._compile_guard import SpyreNeedsSpyreBackend

    if case == "spyre input":
        failure = _default_compile_failure(
            lambda x: torch.sin(x) + 1, torch.randn(4, device="spyre")
        )
    elif case == "module on spyre":
        model = torch.nn.Linear(4, 2).to("spyre")
        failure = _default_compile_failure(model, torch.randn(3, 4, device="spyre"))
    else:
        failure = _default_compile_failure(lambda: torch.ones(3, device="spyre") * 2)
    assert 'backend="spyre"' in str(failure)
    # raised by the check before Inductor is called: nothing of Inductor ran
    assert isinstance(failure.inner_exception, SpyreNeedsSpyreBackend)  # type: ignore[attr-defined]
    assert "KeyError" not in str(failure)


def test_backend_spyre_compiles_what_the_default_backend_refuses() -> None:
    x = torch.randn(4, device="spyre")
    compiled = torch.compile(lambda t: torch.sin(t) + 1, backend="spyre")
    torch.testing.assert_close(compiled(x).cpu(), torch.sin(x.cpu()) + 1)
