"""Strict mode: the capability file is enforced and matmul-class ops compute through float16."""

from __future__ import annotations

import copy
import threading
import time

import pytest
import torch

import torch_spyre_ref


@pytest.fixture
def strict():  # type: ignore[no-untyped-def]
    with torch_spyre_ref.strict_mode():
        yield
    assert not torch_spyre_ref.is_strict()


def test_default_mode_computes_exactly_like_cpu() -> None:
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    assert not torch_spyre_ref.is_strict()
    assert torch.equal((a.to("spyre") @ b.to("spyre")).cpu(), a @ b)


def test_matmul_class_ops_round_through_float16(strict: None) -> None:
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    result = (a.to("spyre") @ b.to("spyre")).cpu()
    expected = (a.half().float() @ b.half().float()).half().float()
    assert torch.equal(result, expected)
    assert not torch.equal(result, a @ b)
    # elementwise ops are not matmul-class: exact
    assert torch.equal((a.to("spyre") + b.to("spyre")).cpu(), a + b)


def test_unsupported_dtype_names_op_dtype_and_entry(strict: None) -> None:
    x = torch.ones(3, device="spyre")
    with pytest.raises(TypeError) as error:
        x.double()
    message = str(error.value)
    assert "float64" in message and "aten::empty_strided" in message
    assert "capabilities.yaml" in message and "dtypes.unsupported" in message


def test_unsupported_op_names_op_and_file(strict: None) -> None:
    x = torch.ones(3, device="spyre")
    with pytest.raises(NotImplementedError) as error:
        torch.special.bessel_j0(x)
    message = str(error.value)
    assert "special_bessel_j0" in message and "capabilities.yaml" in message


def test_per_op_limits_are_enforced(strict: None) -> None:
    a = torch.ones((1,) * 7, device="spyre")  # rank 7 > pow's max_rank 6
    with pytest.raises(NotImplementedError) as error:
        torch.pow(a, 2.5)
    message = str(error.value)
    assert "aten::pow" in message and "max_rank=6" in message and "name: pow" in message
    assert torch.pow(torch.ones((1,) * 6, device="spyre"), 2.5).shape == (1,) * 6


def test_supported_dtypes_and_ops_run(strict: None) -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        x = torch.randn(4, 8, dtype=dtype)
        d = x.to("spyre")
        assert torch.equal(torch.softmax(d, -1).cpu(), torch.softmax(x, -1))
        assert torch.equal(torch.nn.functional.gelu(d).cpu(), torch.nn.functional.gelu(x))
    index = torch.tensor([1, 0], device="spyre")  # int64 is an auxiliary dtype
    assert index.cpu().tolist() == [1, 0]


def test_set_strict_is_process_wide_switch() -> None:
    torch_spyre_ref.set_strict(True)
    try:
        assert torch_spyre_ref.is_strict()
    finally:
        torch_spyre_ref.set_strict(False)
    assert not torch_spyre_ref.is_strict()


def test_a_training_step_stays_within_the_capability_file(strict: None) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 4)
    )
    x, y = torch.randn(16, 32), torch.randn(16, 4)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        on_device = copy.deepcopy(model).to(device="spyre", dtype=dtype)
        optimizer = torch.optim.SGD(on_device.parameters(), lr=0.1)
        loss = (on_device(x.to("spyre", dtype)) - y.to("spyre", dtype)).square().mean()
        loss.backward()
        optimizer.step()
        assert torch.isfinite(loss).item()
        assert on_device[0].weight.dtype == dtype


STRICT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@pytest.mark.parametrize("dtype", STRICT_DTYPES)
def test_printing_and_comparisons_work_in_strict_mode(strict: None, dtype: torch.dtype) -> None:
    values = torch.tensor([[1.5, -2.0, float("nan")], [float("inf"), -float("inf"), 0.0]])
    cpu = values.to(dtype)
    d = cpu.to("spyre")
    assert "device='spyre:0'" in repr(d)
    assert str(d).replace(", device='spyre:0'", "") == str(cpu)
    finite = torch.randn(3, 4).to(dtype)
    on_device = finite.to("spyre")
    torch.testing.assert_close(on_device, on_device.clone())
    torch.testing.assert_close(d, d.clone(), equal_nan=True)
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        torch.testing.assert_close(on_device, on_device + 1)
    assert torch.equal(on_device, on_device.clone()) == torch.equal(finite, finite.clone())
    assert torch.allclose(on_device, on_device + 0) and torch.allclose(d, d, equal_nan=True)
    assert torch.equal(
        torch.isclose(d, d, equal_nan=True).cpu(), torch.isclose(cpu, cpu, equal_nan=True)
    )
    assert torch_spyre_ref.is_strict()  # printing/comparing suspends strict mode only inside


def test_strict_mode_still_rejects_unsupported_ops_after_printing(strict: None) -> None:
    x = torch.ones(3, device="spyre")
    repr(x)
    with pytest.raises(NotImplementedError, match="special_bessel_j0"):
        torch.special.bessel_j0(x)


def test_printing_in_another_thread_does_not_suspend_strict_mode_here(strict: None) -> None:
    """Printing suspends strict mode for the printing thread only: an op refused by strict mode
    keeps raising in every other thread, and the process-wide switch is never touched."""
    printed = torch.randn(4, 4, device="spyre")
    x = torch.ones(3, device="spyre")
    stop = threading.Event()
    reprs = 0
    errors: list[BaseException] = []

    def print_loop() -> None:
        nonlocal reprs
        try:
            while not stop.is_set():
                repr(printed)
                reprs += 1
        except BaseException as error:  # surfaced by the main thread
            errors.append(error)

    printer = threading.Thread(target=print_loop)
    printer.start()
    try:
        deadline = time.monotonic() + 10
        while reprs < 50 and time.monotonic() < deadline:
            with pytest.raises(NotImplementedError, match="special_bessel_j0"):
                torch.special.bessel_j0(x)
            assert torch_spyre_ref.is_strict()
    finally:
        stop.set()
        printer.join()
    assert not errors and reprs >= 50
    assert torch_spyre_ref.is_strict()


@pytest.mark.parametrize("dtype", STRICT_DTYPES)
def test_matrix_times_vector_runs_in_strict_mode(strict: None, dtype: torch.dtype) -> None:
    a, v = torch.randn(3, 4).to(dtype), torch.randn(4).to(dtype)
    product = a.to("spyre") @ v.to("spyre")  # matrix @ vector runs as addmv
    torch.testing.assert_close(product.cpu().float(), (a.float() @ v.float()), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", STRICT_DTYPES)
def test_attention_runs_in_strict_mode(strict: None, dtype: torch.dtype) -> None:
    q = torch.randn(2, 3, 4, 8).to(dtype)
    for causal in (False, True):
        expected = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=causal)
        on_device = q.to("spyre").requires_grad_()
        actual = torch.nn.functional.scaled_dot_product_attention(
            on_device, on_device, on_device, is_causal=causal
        )  # the math path masks with isneginf
        actual.sum().backward()
        torch.testing.assert_close(actual.cpu().float(), expected.float(), atol=1e-2, rtol=1e-2)


def test_an_in_place_matmul_class_op_writes_the_device_tensor(strict: None) -> None:
    # addmv_ runs its CPU kernel directly on the device memory; strict mode rounds the operands
    # through float16 and must round `self` in place, not write into a rounded copy
    x, m, v = torch.randn(3), torch.randn(3, 4), torch.randn(4)
    on_device = x.to("spyre")
    returned = on_device.addmv_(m.to("spyre"), v.to("spyre"))
    assert returned is on_device
    expected = x.half().float() + m.half().float() @ v.half().float()
    torch.testing.assert_close(on_device.cpu(), expected, atol=1e-2, rtol=1e-2)
