"""What pure Python must patch outside the dispatcher: PyTorch has no Python hook for a
PrivateUse1 allocator, so ``torch.UntypedStorage(n, device="spyre")`` (used by ``deepcopy``,
``storage.clone()`` and ``torch.load``) would dereference a missing allocator. Storage
construction on spyre is routed to the device allocator instead.

Printing a tensor and the test harness's comparisons (``torch.testing.assert_close``,
``TestCase.assertEqual``) are host-side inspection, not device programs: they convert to float64
and run many small ops, which strict mode would reject. They run with strict mode suspended.

Pinned host memory needs a C++ hooks object (``getPinnedMemoryAllocator``): ``Tensor.pin_memory``
raises an error naming spyre and the limitation, and a ``DataLoader(pin_memory=True)`` skips
pinning with a warning (as upstream does on MPS) instead of failing in its pinning thread.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.testing._comparison
import torch.utils.data.dataloader

from torch_spyre_ref import _mode
from torch_spyre_ref._allocator import allocate
from torch_spyre_ref.device import check_device_index

_original_new = torch.UntypedStorage.__new__


def new_device_storage(nbytes: int) -> torch.UntypedStorage:
    """A zero-filled spyre storage of ``nbytes`` from the device allocator."""
    return allocate((int(nbytes),), (1,), torch.uint8).untyped_storage()


def _is_spyre(device: Any) -> bool:
    if device is None:
        return False
    return torch.device(device).type == "spyre"


def _storage_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    if cls is torch.UntypedStorage and _is_spyre(kwargs.get("device")):
        check_device_index(torch.device(kwargs["device"]))
        if len(args) == 1 and isinstance(args[0], int) and set(kwargs) <= {"device"}:
            return new_device_storage(args[0])
        if not args and set(kwargs) <= {"device"}:
            return new_device_storage(0)
        raise NotImplementedError(
            "torch.UntypedStorage(..., device='spyre') supports only a byte count; "
            "create a tensor on spyre instead"
        )
    return _original_new(cls, *args, **kwargs)


def _storage_to_spyre(self: Any, device: Any = None, non_blocking: bool = False) -> Any:
    """``storage.spyre()`` (used by ``torch.load``): copy a storage to the device."""
    if self.device.type == "spyre":
        return self
    return new_device_storage(self.nbytes()).copy_(self, non_blocking)


def _outside_strict_mode(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with strict mode suspended, for the calling thread only, while it runs (it inspects
    tensors on the host)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _mode.strict_suspended():
            return fn(*args, **kwargs)

    wrapper.__spyre_outside_strict_mode__ = True  # type: ignore[attr-defined]
    return wrapper


def _exempt(owner: Any, name: str) -> None:
    fn = getattr(owner, name)
    if not getattr(fn, "__spyre_outside_strict_mode__", False):
        setattr(owner, name, _outside_strict_mode(fn))


PIN_MEMORY_UNSUPPORTED = (
    "spyre: pinned host memory is not supported: the pure-Python spyre backend has no C++ "
    "PrivateUse1HooksInterface providing getPinnedMemoryAllocator (see docs/device.md, Known "
    "limits); copy from ordinary host memory instead"
)

_original_pin_memory = torch.Tensor.pin_memory


def _pin_memory(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    try:
        return _original_pin_memory(self, *args, **kwargs)
    except NotImplementedError as error:
        if "getPinnedMemoryAllocator" not in str(error):
            raise
        raise NotImplementedError(PIN_MEMORY_UNSUPPORTED) from error


_original_loader_iter_init = torch.utils.data.dataloader._BaseDataLoaderIter.__init__


def _loader_iter_init(self: Any, loader: Any) -> None:
    _original_loader_iter_init(self, loader)
    if self._pin_memory and self._pin_memory_device == "spyre":
        self._pin_memory = False
        warnings.warn(
            "'pin_memory' argument is set as true but not supported on spyre (no pinned host "
            "memory in the pure-Python backend), device pinned memory won't be used.",
            stacklevel=2,
        )


def install() -> None:
    torch.Tensor.pin_memory = _pin_memory  # type: ignore[method-assign,assignment]
    loader_iter = torch.utils.data.dataloader._BaseDataLoaderIter
    loader_iter.__init__ = _loader_iter_init  # type: ignore[method-assign]
    # Tensor.__repr__ (and so str/print) formats through torch._tensor_str._str; assert_close and
    # TestCase.assertEqual compare tensors through TensorLikePair.compare.
    _exempt(torch._tensor_str, "_str")
    _exempt(torch.testing._comparison.TensorLikePair, "compare")
    torch.UntypedStorage.__new__ = _storage_new  # type: ignore[method-assign]
    torch.UntypedStorage.spyre = _storage_to_spyre  # type: ignore[attr-defined]
