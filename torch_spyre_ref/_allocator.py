"""The device allocator: stick-padded, stick-aligned host buffers, with memory statistics.

Each allocation is a ``bytearray`` subclass (weak-referenceable, buffer protocol) sized to the
padded stick layout plus alignment slack. The CPU tensor made over it with ``torch.frombuffer``
keeps the buffer alive; the spyre tensor keeps that CPU tensor alive through DLPack. When the
last spyre tensor on the storage dies, the buffer is collected and ``__del__`` returns its bytes
to the statistics.
"""

from __future__ import annotations

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
    ``allocation.all.*``; nothing is cached, so reserved memory is allocated memory)."""

    allocated: int = 0  # bytes alive
    peak: int = 0
    live: int = 0  # allocations alive
    peak_live: int = 0
    allocations: int = 0  # accumulated (since the start or reset_accumulated)
    frees: int = 0
    allocated_total: int = 0
    freed_total: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, nbytes: int) -> None:
        with self.lock:
            self.allocated += nbytes
            self.peak = max(self.peak, self.allocated)
            self.live += 1
            self.peak_live = max(self.peak_live, self.live)
            self.allocations += 1
            self.allocated_total += nbytes

    def remove(self, nbytes: int) -> None:
        with self.lock:
            self.allocated -= nbytes
            self.live -= 1
            self.frees += 1
            self.freed_total += nbytes

    def reset_peak(self) -> None:
        with self.lock:
            self.peak, self.peak_live = self.allocated, self.live

    def reset_accumulated(self) -> None:
        with self.lock:
            self.allocations = self.frees = self.allocated_total = self.freed_total = 0


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
    itemsize = dtype.itemsize
    if contiguous:
        needed = itemsize
        for s in size:
            needed *= s
    else:
        needed = storage_bytes(size, stride, itemsize)
    if needed == 0:  # nothing to hold: an empty tensor, no device memory
        if contiguous:
            return adopt_as_spyre(torch.empty(tuple(size), dtype=dtype))
        return adopt_as_spyre(torch.empty_strided(tuple(size), tuple(stride), dtype=dtype))
    accounted = padded_allocation_bytes(size, itemsize, needed)
    buffer = _DeviceBuffer(accounted + STICK_BYTES)  # slack for the alignment shift
    buffer.accounted = accounted
    STATS.add(accounted)
    shift = -_address(buffer) % STICK_BYTES  # align the first element on a stick boundary
    if contiguous:
        dense = torch.frombuffer(buffer, dtype=dtype, count=needed // itemsize, offset=shift)
        return adopt_as_spyre(dense.view(size))
    flat = torch.frombuffer(buffer, dtype=dtype, count=accounted // itemsize, offset=shift)
    return adopt_as_spyre(flat.as_strided(tuple(size), tuple(stride)))


def _address(buffer: bytearray) -> int:
    return torch.frombuffer(buffer, dtype=torch.uint8, count=1).data_ptr()
