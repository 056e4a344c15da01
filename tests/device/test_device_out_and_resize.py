"""``out=`` arguments and ``resize_`` on spyre behave as on CPU: geometry, storage offset, storage
sharing, and upstream's resize warning (given once)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch

import torch_spyre_ref

RESIZED = "An output with one or more elements was resized"


def _on_both(
    fn: Callable[[str], tuple[torch.Tensor, ...]],
) -> list[tuple[tuple[torch.Tensor, ...], int]]:
    """Run ``fn`` on CPU and on spyre; per device, its tensors and the resize warnings seen."""
    runs = []
    for device in ("cpu", "spyre"):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            tensors = fn(device)
        runs.append((tensors, sum(RESIZED in str(w.message) for w in seen)))
    return runs


def _assert_same(fn: Callable[[str], tuple[torch.Tensor, ...]]) -> None:
    (cpu, cpu_warnings), (device, device_warnings) = _on_both(fn)
    assert device_warnings == cpu_warnings
    for expected, actual in zip(cpu, device, strict=True):
        assert actual.device.type == "spyre"
        assert actual.shape == expected.shape
        assert actual.stride() == expected.stride()
        assert actual.storage_offset() == expected.storage_offset()
        torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0)


def _add_into_larger_out(device: str) -> tuple[torch.Tensor, ...]:
    out = torch.full((10,), 7.0, device=device)
    torch.add(torch.ones(2, 3, device=device), 1, out=out)
    return (out,)


def _mm_into_larger_out(device: str) -> tuple[torch.Tensor, ...]:
    a = torch.arange(6.0, device=device).view(2, 3)
    out = torch.full((4, 4), 7.0, device=device)
    torch.mm(a, a.t(), out=out)
    return (out,)


def _sum_into_larger_out(device: str) -> tuple[torch.Tensor, ...]:
    out = torch.zeros(5, device=device)
    torch.sum(torch.ones(2, 3, device=device), 0, out=out)
    return (out,)


def _add_into_same_numel_other_shape(device: str) -> tuple[torch.Tensor, ...]:
    out = torch.zeros(3, 2, device=device)
    torch.add(torch.arange(6.0, device=device).view(2, 3), 1, out=out)
    return (out,)


def _max_into_larger_outs(device: str) -> tuple[torch.Tensor, ...]:
    values = torch.zeros(6, device=device)
    indices = torch.zeros(6, dtype=torch.long, device=device)
    torch.max(torch.arange(6.0, device=device).view(2, 3), 1, out=(values, indices))
    return values, indices


def _max_into_outs_one_of_which_must_grow(device: str) -> tuple[torch.Tensor, ...]:
    values = torch.zeros(6, device=device)  # large enough: resized in place
    base = torch.zeros(3, dtype=torch.long, device=device)
    indices = base[1:2]  # must grow its storage (shared with base)
    torch.max(torch.arange(12.0, device=device).view(4, 3), 1, out=(values, indices))
    return values, indices, base


def _offset_view_out_within_base(device: str) -> tuple[torch.Tensor, ...]:
    base = torch.zeros(10, device=device)
    out = base[2:4]
    torch.add(torch.ones(5, device=device), 1, out=out)
    return base, out


def _offset_view_out_growing_base(device: str) -> tuple[torch.Tensor, ...]:
    base = torch.zeros(4, device=device)
    out = base[1:3]
    torch.add(torch.arange(8.0, device=device), 1, out=out)
    return base, out


@pytest.mark.parametrize(
    "fn",
    [
        _add_into_larger_out,
        _mm_into_larger_out,
        _sum_into_larger_out,
        _add_into_same_numel_other_shape,
        _max_into_larger_outs,
    ],
)
def test_wrong_shaped_out_large_enough_is_resized_like_cpu(
    fn: Callable[[str], tuple[torch.Tensor, ...]],
) -> None:
    _assert_same(fn)


@pytest.mark.parametrize(
    "fn",
    [
        _offset_view_out_within_base,
        _offset_view_out_growing_base,
        _max_into_outs_one_of_which_must_grow,
    ],
)
def test_out_view_keeps_its_storage_offset_and_its_base_like_cpu(
    fn: Callable[[str], tuple[torch.Tensor, ...]],
) -> None:
    _assert_same(fn)


def test_resize_warning_is_given_once_when_out_must_grow() -> None:
    def grow(device: str) -> tuple[torch.Tensor, ...]:
        out = torch.zeros(2, device=device)
        torch.add(torch.ones(4, device=device), 1, out=out)
        return (out,)

    (_, cpu_warnings), (_, device_warnings) = _on_both(grow)
    assert cpu_warnings == device_warnings == 1
    _assert_same(grow)


def test_out_that_must_grow_works_in_strict_mode() -> None:
    with torch_spyre_ref.strict_mode(), pytest.warns(UserWarning, match=RESIZED):
        out = torch.zeros(2, device="spyre")
        torch.add(torch.ones(4, device="spyre"), 1, out=out)
    assert torch.equal(out.cpu(), torch.full((4,), 2.0))


def test_resize_growing_storage_keeps_views_on_one_storage() -> None:
    def grow(device: str) -> tuple[torch.Tensor, ...]:
        a = torch.arange(4.0, device=device)
        b = a[:]
        b.resize_(100)
        b[0] = 5
        b[99] = 7
        return a, b[:4], b[99:]

    _assert_same(grow)
    a = torch.zeros(4, device="spyre")
    b = a[:]
    b.resize_(100)
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert a.untyped_storage().nbytes() == b.untyped_storage().nbytes() >= 400


def test_resize_growth_keeps_memory_statistics_stick_padded() -> None:
    spyre_module = torch.spyre  # type: ignore[attr-defined]
    a = torch.zeros(4, device="spyre")  # 16 bytes: one 128-byte stick
    before = spyre_module.memory_allocated()
    a[:].resize_(100)  # 400 bytes: four sticks; the old stick is freed
    assert spyre_module.memory_allocated() - before == 512 - 128
    assert a.untyped_storage().data_ptr() % 128 == 0
