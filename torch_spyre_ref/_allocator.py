"""The device allocator: stick-padded, stick-aligned host buffers, with memory statistics.

Each allocation is a ``bytearray`` subclass (weak-referenceable, buffer protocol) sized to the
padded stick layout plus alignment slack. The CPU tensor made over it with ``torch.frombuffer``
keeps the buffer alive; the spyre tensor keeps that CPU tensor alive through DLPack. When the
last spyre tensor on the storage dies, the buffer is collected and ``__del__`` returns its bytes
to the statistics.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from torch_spyre_ref._dlpack import adopt_as_spyre
from torch_spyre_ref.stick import STICK_BYTES, padded_allocation_bytes


@dataclass
class MemoryStats:
    """Padded bytes and counts of live device allocations, their peaks and the accumulated
    totals (what a caching allocator reports as ``allocated_bytes.all.*`` and
    ``allocation.all.*``; nothing is cached, so reserved memory is allocated memory).

    On every allocation's path: an allocation updates six fields, a free two; the freed
    totals are derived (what was allocated since the last reset, minus what is still alive
    of it)."""

    allocated: int = 0  # bytes alive
    peak: int = 0
    live: int = 0  # allocations alive
    peak_live: int = 0
    allocated_total: int = 0  # accumulated since the start or reset_accumulated()
    allocations: int = 0
    _bytes_at_reset: int = 0  # bytes and allocations alive at the last reset_accumulated()
    _live_at_reset: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, nbytes: int) -> None:
        with self.lock:
            self.allocated += nbytes
            if self.allocated > self.peak:
                self.peak = self.allocated
            self.live += 1
            if self.live > self.peak_live:
                self.peak_live = self.live
            self.allocated_total += nbytes
            self.allocations += 1

    def remove(self, nbytes: int) -> None:
        with self.lock:
            self.allocated -= nbytes
            self.live -= 1

    @property
    def freed_total(self) -> int:
        return self._bytes_at_reset + self.allocated_total - self.allocated

    @property
    def frees(self) -> int:
        return self._live_at_reset + self.allocations - self.live

    def reset_peak(self) -> None:
        with self.lock:
            self.peak, self.peak_live = self.allocated, self.live

    def reset_accumulated(self) -> None:
        with self.lock:
            self.allocated_total = self.allocations = 0
            self._bytes_at_reset, self._live_at_reset = self.allocated, self.live


STATS = MemoryStats()


class _DeviceBuffer(bytearray):
    """Host memory standing in for one device allocation."""

    accounted: int = 0

    def __del__(self) -> None:
        if self.accounted:
            STATS.remove(self.accounted)


def storage_bytes(size: Sequence[int], stride: Sequence[int], itemsize: int) -> int:
    """Bytes a strided tensor reaches from its first element (0 for an empty tensor)."""
    if any(s == 0 for s in size):
        return 0
    return (1 + sum((s - 1) * st for s, st in zip(size, stride, strict=True))) * itemsize


def allocate(
    size: Sequence[int], stride: Sequence[int], dtype: torch.dtype, contiguous: bool = False
) -> torch.Tensor:
    """A new, zero-filled spyre tensor with the given geometry in a stick-padded allocation
    (``contiguous``: dense row-major strides, ``stride`` is then ignored; a faster path)."""
    return allocate_with_view(size, stride, dtype, contiguous)[0]


def allocate_with_view(
    size: Sequence[int], stride: Sequence[int], dtype: torch.dtype, contiguous: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``allocate``, and a CPU tensor over the same memory (the one the spyre tensor was
    adopted from): a caller that fills the allocation needs no second relabelling."""
    itemsize = dtype.itemsize
    if contiguous:
        needed = itemsize
        for s in size:
            needed *= s
    else:
        needed = storage_bytes(size, stride, itemsize)
    if needed == 0:  # nothing to hold: an empty tensor, no device memory
        if contiguous:
            empty = torch.empty(tuple(size), dtype=dtype)
        else:
            empty = torch.empty_strided(tuple(size), tuple(stride), dtype=dtype)
        return adopt_as_spyre(empty), empty
    if contiguous and size:  # every row padded to whole sticks (the common case, inlined)
        row_bytes = size[-1] * itemsize
        accounted = needed // row_bytes * (-(-row_bytes // STICK_BYTES) * STICK_BYTES)
    else:
        accounted = padded_allocation_bytes(size, itemsize, needed)
    buffer = _DeviceBuffer(accounted + STICK_BYTES)  # slack for the alignment shift
    buffer.accounted = accounted
    STATS.add(accounted)
    shift = -_address(buffer) % STICK_BYTES  # align the first element on a stick boundary
    if contiguous:
        dense = torch.frombuffer(buffer, dtype=dtype, count=needed // itemsize, offset=shift)
        # view(*sizes): parsing a torch.Size (or a tuple) argument costs 0.5-1.5 us more
        host = dense.view(*size) if len(size) else dense.view(())
    else:
        flat = torch.frombuffer(buffer, dtype=dtype, count=accounted // itemsize, offset=shift)
        host = flat.as_strided(tuple(size), tuple(stride))
    return adopt_as_spyre(host), host


def _address(buffer: bytearray) -> int:
    """Where the buffer's bytes start (a ctypes view costs a fifth of a tensor view)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(buffer))
