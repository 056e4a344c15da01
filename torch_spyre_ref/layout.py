"""``stick_layout(t)``: how a tensor occupies 128-byte sticks on the device."""

from __future__ import annotations

import torch

from torch_spyre_ref.stick import StickLayout, layout_for


def stick_layout(t: torch.Tensor) -> StickLayout:
    """The stick layout of ``t``'s shape and dtype: sticks, padding bytes, padded bytes."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"stick_layout expects a tensor, got {type(t).__name__}")
    return layout_for(tuple(t.shape), t.element_size())
