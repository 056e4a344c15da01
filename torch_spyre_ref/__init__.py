"""torch_spyre_ref: a CPU-emulated ``spyre`` PyTorch device (PrivateUse1).

``import torch_spyre_ref`` registers the device; see docs/device.md.
"""

from __future__ import annotations

import torch

from torch_spyre_ref import _registration
from torch_spyre_ref._mode import is_strict, set_strict, strict_mode

_registration.register()

from torch_spyre_ref.layout import stick_layout  # noqa: E402  (needs the device registered)

__all__ = ["is_strict", "set_strict", "stick_layout", "strict_mode", "torch"]
