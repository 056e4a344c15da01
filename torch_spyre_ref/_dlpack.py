"""Zero-copy relabelling of tensors between the CPU and the spyre device through DLPack.

A spyre tensor owns ordinary host memory. To adopt a CPU tensor as a PrivateUse1 tensor (and to
look at a spyre tensor through a CPU view), we export it as a DLPack capsule, overwrite the
capsule's device type, and import it again: torch maps ``kDLExtDev`` to PrivateUse1 and
``kDLCPU`` to the CPU. No byte is copied; the imported tensor keeps the exporter alive.
"""

from __future__ import annotations

import ctypes

import torch

KDL_CPU = 1
KDL_EXT_DEV = 12  # torch.from_dlpack maps this device type to PrivateUse1
_DEVICE_TYPE_OFFSET = 8  # DLManagedTensor.dl_tensor.device.device_type follows the data pointer

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_to_dlpack = torch._C._to_dlpack
_from_dlpack = torch._C._from_dlpack


def _relabel(tensor: torch.Tensor, device_type: int) -> torch.Tensor:
    capsule = _to_dlpack(tensor)
    address = _capsule_pointer(capsule, b"dltensor")
    ctypes.c_int32.from_address(address + _DEVICE_TYPE_OFFSET).value = device_type
    return _from_dlpack(capsule)


def adopt_as_spyre(cpu: torch.Tensor) -> torch.Tensor:
    """A spyre tensor sharing ``cpu``'s memory (same sizes and strides, storage offset folded)."""
    return _relabel(cpu, KDL_EXT_DEV)


def cpu_view(spyre: torch.Tensor) -> torch.Tensor:
    """A CPU tensor sharing ``spyre``'s memory, for running CPU kernels in place.

    DLPack cannot carry the conjugate/negative bits, so they are cleared on the way out and set
    again on the CPU view (calling ``resolve_*`` here would re-enter the device and recurse).
    """
    if spyre.is_neg():
        return torch._neg_view(cpu_view(torch._neg_view(spyre)))
    if spyre.is_conj():
        return torch._conj(cpu_view(torch._conj(spyre)))
    return _relabel(spyre.detach() if spyre.requires_grad else spyre, KDL_CPU)
