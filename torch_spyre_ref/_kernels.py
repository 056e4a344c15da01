"""Spyre kernels the boxed fallback cannot provide: factories, storage growth, transfers and
the convolution entry points PyTorch reserves for out-of-tree devices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torch_spyre_ref import _mode, _strict
from torch_spyre_ref._allocator import allocate, storage_bytes
from torch_spyre_ref._dlpack import cpu_view
from torch_spyre_ref._fallback import CPU_KEYSET, _contiguous_strides, _plan, run_on_cpu
from torch_spyre_ref.device import check_device_index

aten = torch.ops.aten


_DENSE_FORMATS = (None, torch.contiguous_format, torch.preserve_format)


def _strides_for(size: Sequence[int], memory_format: torch.memory_format | None) -> tuple[int, ...]:
    if memory_format in _DENSE_FORMATS:
        return _contiguous_strides(torch.Size(size))
    return torch.empty(size, device="meta", memory_format=memory_format).stride()


def empty_memory_format(
    size: Sequence[int],
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
    memory_format: torch.memory_format | None = None,
) -> torch.Tensor:
    dtype = dtype or torch.get_default_dtype()
    check_device_index(device)
    if _mode.strict_active():
        _strict.check_allocation("aten::empty.memory_format", dtype)
    if memory_format in _DENSE_FORMATS:
        return allocate(size, (), dtype, contiguous=True)  # strides unused on the dense path
    return allocate(size, _strides_for(size, memory_format), dtype)


def empty_strided(
    size: Sequence[int],
    stride: Sequence[int],
    dtype: torch.dtype | None = None,
    layout: torch.layout | None = None,
    device: torch.device | None = None,
    pin_memory: bool | None = None,
) -> torch.Tensor:
    dtype = dtype or torch.get_default_dtype()
    check_device_index(device)
    if _mode.strict_active():
        _strict.check_allocation("aten::empty_strided", dtype)
    return allocate(size, stride, dtype, contiguous=tuple(stride) == _contiguous_strides(size))


def resize_(
    self: torch.Tensor, size: Sequence[int], memory_format: torch.memory_format | None = None
) -> torch.Tensor:
    """Grow the storage through the device allocator when needed, then let the generic CPU kernel
    set the sizes (it only reallocates when the storage is too small, which it no longer is)."""
    itemsize = self.element_size()
    needed = storage_bytes(size, _strides_for(size, memory_format), itemsize)
    needed += int(self.storage_offset()) * itemsize
    storage = self.untyped_storage()
    if storage.nbytes() < needed:
        _grow_storage(storage, needed, self.dtype)
    return aten.resize_.default.redispatch(CPU_KEYSET, self, size, memory_format=memory_format)


def _grow_storage(storage: torch.UntypedStorage, nbytes: int, dtype: torch.dtype) -> None:
    """Grow ``storage`` itself to ``nbytes`` (every tensor on it sees the growth, as on CPU): a
    fresh stick-padded device allocation takes the old bytes, then its memory is moved into the
    storage (``_swap_data_ptr_`` needs equal sizes or an empty side, hence the empty step). The
    old allocation is freed, and leaves the statistics, when the empty storage dies."""
    itemsize = dtype.itemsize
    fresh = allocate((-(-nbytes // itemsize),), (1,), dtype)
    old_bytes = storage.nbytes()
    if old_bytes:
        cpu_view(fresh).view(torch.uint8)[:old_bytes].copy_(_bytes_of(storage))
    # (torch's stubs do not declare the private StorageBase method _swap_data_ptr_)
    storage._swap_data_ptr_(allocate((0,), (1,), torch.uint8).untyped_storage())  # type: ignore[attr-defined]
    storage._swap_data_ptr_(fresh.untyped_storage())  # type: ignore[attr-defined]


def _bytes_of(storage: torch.UntypedStorage) -> torch.Tensor:
    """A CPU uint8 view of a spyre storage's bytes."""
    device_bytes = torch.empty(0, dtype=torch.uint8, device="spyre")
    aten.set_.source_Storage_storage_offset(device_bytes, storage, 0, (storage.nbytes(),), (1,))
    return cpu_view(device_bytes)


def _copy_from(self: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    _host(dst).copy_(_host(self))
    return dst


def _copy_from_and_resize(self: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    dst.resize_(self.shape)
    return _copy_from(self, dst)


def _host(t: torch.Tensor) -> torch.Tensor:
    return cpu_view(t) if t.device.type == "spyre" else t


def convolution_overrideable(*args: Any) -> torch.Tensor:
    op = aten.convolution.default
    result: torch.Tensor = run_on_cpu(op, _plan(op), args, {})
    return result


def convolution_backward_overrideable(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[torch.Tensor | None, ...]:
    op = aten.convolution_backward.default
    bias_sizes = [weight.shape[1] * groups if transposed else weight.shape[0]]
    args = (
        grad_output,
        input,
        weight,
        bias_sizes,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        output_mask,
    )
    result: tuple[torch.Tensor | None, ...] = run_on_cpu(op, _plan(op), args, {})
    return result


SPYRE_KERNELS = {
    "empty.memory_format": empty_memory_format,
    "empty_strided": empty_strided,
    "resize_": resize_,
    "_copy_from": _copy_from,
    "_copy_from_and_resize": _copy_from_and_resize,
    "convolution_overrideable": convolution_overrideable,
    "convolution_backward_overrideable": convolution_backward_overrideable,
}
