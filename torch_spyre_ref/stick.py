"""Spyre's stick layout, as pure arithmetic (no torch import).

Spyre moves data in 128-byte *sticks*. The innermost dimension of a device tensor is laid out
in whole sticks, so a row whose byte size is not a multiple of 128 is padded. The emulator keeps
PyTorch's dense strides for the logical tensor (so views and ``is_contiguous`` behave exactly as
on CPU) and models the padding in what it allocates and reports: every allocation is rounded up
to the padded size computed here and aligned to a stick boundary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

STICK_BYTES = 128


@dataclass(frozen=True)
class StickLayout:
    """How a tensor of a given shape and element size occupies sticks on the device."""

    shape: tuple[int, ...]
    itemsize: int
    rows: int  # product of all dimensions but the innermost
    sticks_per_row: int
    elements_per_stick: int

    @property
    def sticks(self) -> int:
        return self.rows * self.sticks_per_row

    @property
    def logical_bytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    @property
    def padded_bytes(self) -> int:
        return self.sticks * STICK_BYTES

    @property
    def padding_bytes(self) -> int:
        return self.padded_bytes - self.logical_bytes


def layout_for(shape: Sequence[int], itemsize: int) -> StickLayout:
    """The stick layout of a dense tensor; a 0-d tensor occupies one stick like a (1,) tensor."""
    if itemsize <= 0:
        raise ValueError(f"itemsize must be positive, got {itemsize}")
    dims = tuple(int(d) for d in shape)
    inner = dims[-1] if dims else 1
    rows = math.prod(dims[:-1]) if dims else 1
    per_stick = max(1, STICK_BYTES // itemsize)
    sticks_per_row = math.ceil(inner / per_stick) if inner > 0 else 0
    if rows == 0:
        sticks_per_row = 0
    return StickLayout(dims, itemsize, rows, sticks_per_row, per_stick)


def padded_allocation_bytes(shape: Sequence[int], itemsize: int, storage_bytes: int) -> int:
    """Bytes a device allocation occupies: the stick-padded size of the tensor it is made for,
    never less than the storage it must hold, rounded up to whole sticks. (The same arithmetic
    as ``layout_for(...).padded_bytes``, without building a StickLayout: this is on every
    allocation's path.)"""
    if shape:
        rows = 1
        for d in shape[:-1]:
            rows *= d
        row_bytes = shape[-1] * itemsize
    else:
        rows, row_bytes = 1, itemsize
    padded = rows * (-(-row_bytes // STICK_BYTES) * STICK_BYTES)
    return max(padded, round_up_to_stick(storage_bytes))


def round_up_to_stick(nbytes: int) -> int:
    return -(-nbytes // STICK_BYTES) * STICK_BYTES
