"""The spyre device as a user sees it: tensors, ops, autograd, serialization, errors."""

from __future__ import annotations

import copy
import io

import pytest
import torch

import torch_spyre_ref  # noqa: F401


def spyre(t: torch.Tensor) -> torch.Tensor:
    return t.to("spyre")


# `Tensor.is_spyre`, `Tensor.spyre()` and `UntypedStorage.spyre()` are generated at run time by
# torch.utils.generate_methods_for_privateuse1_backend, so torch's stubs cannot declare them:
# those lines carry a narrow `type: ignore[attr-defined]`.


def test_round_trip_keeps_values_dtype_and_shape() -> None:
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool):
        cpu = torch.arange(12).reshape(3, 4).to(dtype)
        on_device = cpu.to("spyre")
        assert on_device.device == torch.device("spyre:0")
        assert on_device.is_spyre and on_device.dtype == dtype  # type: ignore[attr-defined]
        assert torch.equal(on_device.cpu(), cpu)
    assert torch.ones(2).spyre().device.type == "spyre"  # type: ignore[attr-defined]


def test_factories_and_printing() -> None:
    z = torch.zeros(2, 3, device="spyre", dtype=torch.float16)
    assert z.device.type == "spyre" and z.dtype == torch.float16
    assert torch.equal(torch.full((2,), 7.0, device="spyre").cpu(), torch.full((2,), 7.0))
    assert torch.equal(torch.arange(5, device="spyre").cpu(), torch.arange(5))
    assert "device='spyre:0'" in repr(torch.ones(2, device="spyre"))
    assert torch.tensor([1.0, 2.0], device="spyre").device.type == "spyre"


def test_ops_compute_like_cpu() -> None:
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    da, db = spyre(a), spyre(b)
    assert torch.equal((da + db).cpu(), a + b)
    assert torch.equal((da @ db).cpu(), a @ b)
    assert torch.equal(torch.softmax(da, -1).cpu(), torch.softmax(a, -1))
    assert torch.equal(da.sum(0).cpu(), a.sum(0))
    assert torch.equal((da + 2).cpu(), a + 2)
    assert torch.equal(torch.remainder(da, 3).cpu(), torch.remainder(a, 3))


def test_views_share_memory_and_strides() -> None:
    d = spyre(torch.arange(6.0).reshape(2, 3))
    t = d.t()
    assert t.stride() == (1, 3) and not t.is_contiguous()
    d.view(3, 2).add_(1)
    assert torch.equal(t.cpu(), (torch.arange(6.0).reshape(2, 3) + 1).t())
    assert d[1].data_ptr() == d.data_ptr() + 3 * 4


def test_in_place_metadata_ops_change_the_callers_tensor() -> None:
    d = torch.ones(1, 3, device="spyre")
    d.squeeze_()
    assert d.shape == (3,)
    d.unsqueeze_(1)
    assert d.shape == (3, 1)
    d.t_()
    assert d.shape == (1, 3)


def test_out_argument_is_resized_and_filled() -> None:
    d = spyre(torch.arange(4.0))
    out = torch.empty(0, device="spyre")
    result = torch.add(d, d, out=out)
    assert result is out
    assert out.shape == (4,) and torch.equal(out.cpu(), torch.arange(4.0) * 2)


def test_resize_grows_storage() -> None:
    d = spyre(torch.arange(3.0))
    d.resize_(10)
    assert d.shape == (10,)
    assert torch.equal(d[:3].cpu(), torch.arange(3.0))


def test_zero_size_conj_and_neg_tensors() -> None:
    assert (torch.ones(0, 3, device="spyre") + 1).shape == (0, 3)
    c = torch.randn(3, dtype=torch.complex64)
    assert torch.equal(spyre(c).conj().cpu(), c.conj())
    x = torch.randn(3)
    assert torch.equal(torch._neg_view(spyre(x)).cpu(), -x)


def test_indexing_and_convolution() -> None:
    x = torch.randn(4, 5)
    d = spyre(x)
    assert torch.equal(d[d > 0].cpu(), x[x > 0])
    assert torch.equal(d[torch.tensor([2, 0])].cpu(), x[torch.tensor([2, 0])])
    image, kernel = torch.randn(1, 2, 6, 6), torch.randn(3, 2, 3, 3)
    conv = torch.nn.functional.conv2d(spyre(image), spyre(kernel))
    assert torch.equal(conv.cpu(), torch.nn.functional.conv2d(image, kernel))


def test_mixing_devices_raises_like_other_devices() -> None:
    d = torch.ones(3, device="spyre")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        d + torch.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.mm(torch.ones(3, 3, device="spyre"), torch.ones(3, 3))
    assert torch.equal((d + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))  # 0-d CPU is fine


def test_autograd_matches_cpu() -> None:
    x = torch.randn(4, 4, requires_grad=True)
    dx = spyre(x.detach()).requires_grad_()
    (x @ x).relu().sum().backward()
    (dx @ dx).relu().sum().backward()
    assert dx.grad is not None and dx.grad.device.type == "spyre"
    assert x.grad is not None and torch.equal(dx.grad.cpu(), x.grad)


def test_module_training_step_matches_cpu() -> None:
    torch.manual_seed(0)
    cpu_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 2))
    device_model = copy.deepcopy(cpu_model).to("spyre")
    data = torch.randn(5, 8)
    for model, x in ((cpu_model, data), (device_model, spyre(data))):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(x).square().mean().backward()
        optimizer.step()
    for p_cpu, p_dev in zip(cpu_model.parameters(), device_model.parameters(), strict=True):
        assert torch.allclose(p_dev.cpu(), p_cpu, atol=1e-6)


def test_manual_seed_reproducible_and_independent_of_cpu_stream() -> None:
    torch.manual_seed(7)
    first = torch.randn(5, device="spyre").cpu()
    torch.manual_seed(7)
    torch.randn(100)  # drawing on the CPU does not move the spyre stream
    second = torch.randn(5, device="spyre").cpu()
    assert torch.equal(first, second)
    torch.spyre.manual_seed(8)  # type: ignore[attr-defined]
    assert not torch.equal(torch.randn(5, device="spyre").cpu(), first)


def test_save_load_and_deepcopy() -> None:
    d = spyre(torch.arange(6.0).reshape(2, 3))
    buffer = io.BytesIO()
    torch.save({"w": d}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)["w"]
    assert loaded.device.type == "spyre" and torch.equal(loaded.cpu(), d.cpu())
    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu")["w"]
    assert on_cpu.device.type == "cpu" and torch.equal(on_cpu, d.cpu())
    param = torch.nn.Parameter(torch.ones(3, device="spyre"))
    clone = copy.deepcopy(param)
    assert isinstance(clone, torch.nn.Parameter) and clone.device.type == "spyre"
    clone.data.add_(1)
    assert torch.equal(param.cpu(), torch.ones(3))


def test_autocast_lowers_matmul_and_keeps_softmax_in_float32() -> None:
    a = torch.randn(4, 4, device="spyre")
    with torch.autocast("spyre", dtype=torch.float16):
        product = a @ a
        probabilities = torch.softmax(product, -1)
        summed = a + a
    assert product.dtype == torch.float16
    assert probabilities.dtype == torch.float32
    assert summed.dtype == torch.float32
    expected = (a.cpu().half() @ a.cpu().half()).float()
    assert torch.allclose(product.float().cpu(), expected, atol=1e-2)


def test_storage_on_device() -> None:
    storage = torch.UntypedStorage(16, device="spyre")
    assert storage.device.type == "spyre" and storage.nbytes() == 16
    assert torch.UntypedStorage(8).spyre().device.type == "spyre"  # type: ignore[attr-defined]


def test_out_argument_with_wrong_shape_is_resized_with_upstreams_warning() -> None:
    d = spyre(torch.arange(4.0))
    out = torch.zeros(2, device="spyre")
    with pytest.warns(UserWarning, match="was resized"):
        torch.add(d, d, out=out)
    assert out.shape == (4,) and torch.equal(out.cpu(), torch.arange(4.0) * 2)


def test_cpu_kernels_win_over_composites_for_float16_norms() -> None:
    x = torch.randn(4, 64, dtype=torch.float16)
    weight, bias = torch.randn(64, dtype=torch.float16), torch.randn(64, dtype=torch.float16)
    expected = torch.nn.functional.layer_norm(x, (64,), weight, bias)
    actual = torch.nn.functional.layer_norm(spyre(x), (64,), spyre(weight), spyre(bias))
    assert torch.equal(actual.cpu(), expected)
    grouped = torch.nn.functional.group_norm(spyre(x.view(4, 8, 8)), 4).cpu()
    assert torch.equal(grouped, torch.nn.functional.group_norm(x.view(4, 8, 8), 4))


def test_convolution_backward_matches_cpu() -> None:
    image, kernel, bias = torch.randn(2, 3, 7, 7), torch.randn(4, 3, 3, 3), torch.randn(4)
    cpu_inputs = [t.clone().requires_grad_() for t in (image, kernel, bias)]
    device_inputs = [spyre(t).requires_grad_() for t in (image, kernel, bias)]
    for image_in, kernel_in, bias_in in (cpu_inputs, device_inputs):
        torch.nn.functional.conv2d(
            image_in, kernel_in, bias_in, padding=1
        ).square().sum().backward()
    for cpu_input, device_input in zip(cpu_inputs, device_inputs, strict=True):
        assert device_input.grad is not None and cpu_input.grad is not None
        torch.testing.assert_close(device_input.grad.cpu(), cpu_input.grad)


def test_pinned_memory_is_a_named_limitation_and_dataloader_skips_it() -> None:
    with pytest.raises(NotImplementedError, match="spyre: pinned host memory is not supported"):
        torch.ones(2).pin_memory()
    dataset = torch.utils.data.TensorDataset(torch.arange(6.0))
    for workers in (0, 1):
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=4, pin_memory=True, num_workers=workers
        )
        with pytest.warns(UserWarning, match="not supported on spyre"):
            batches = [batch.to("spyre") for (batch,) in loader]
        assert [b.cpu().tolist() for b in batches] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]
