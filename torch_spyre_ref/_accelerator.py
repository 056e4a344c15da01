"""``torch.accelerator`` on spyre, as on other accelerators.

``torch.accelerator`` reaches a backend through two C++ interfaces: the device guard (device
index, streams, events, synchronize) and a ``DeviceAllocator`` (memory statistics). PyTorch's
Python device guard implements only the device type (its binding exposes ``type_``), and a
pure-Python backend cannot register a C++ allocator, so ``synchronize`` raised "Backend doesn't
support synchronizing all streams on device", the memory functions an internal assert, and
``empty_host_cache`` crashed the process. While spyre is the current accelerator, the
functions below answer from the ``torch.spyre`` module instead (the same figures
``torch.spyre.memory_stats`` gives); for any other accelerator they are PyTorch's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.accelerator
import torch.accelerator.memory
from torch.accelerator._utils import _get_device_index

from torch_spyre_ref import device as spyre

_MODULES = (torch.accelerator, torch.accelerator.memory)


def _on_spyre() -> bool:
    current = torch.accelerator.current_accelerator()
    return current is not None and current.type == "spyre"


def _index(device: Any) -> int:
    """The index `device` names (torch's parsing: an int, "spyre:0", a torch.device, None for
    the current one), validated against the device count as other backends do."""
    return spyre._index(_get_device_index(device, optional=True))


def synchronize(device: Any = None, /) -> None:
    spyre.synchronize(_index(device))


def set_device_index(device: Any, /) -> None:
    spyre.set_device(_index(device))


def current_stream(device: Any = None, /) -> torch.Stream:
    return spyre.current_stream(_index(device))


def set_stream(stream: torch.Stream) -> None:
    spyre.set_stream(stream)


def get_device_capability(device: Any = None, /) -> dict[str, Any]:
    """The dtypes tensors can be allocated in on the device (the capability file's)."""
    from torch_spyre_ref.capabilities import capabilities

    _index(device)
    caps = capabilities()
    names = [*caps.supported_dtypes(), *caps.dtypes.auxiliary]
    return {"supported_dtypes": {getattr(torch, name) for name in names}}


def memory_stats(device_index: Any = None, /) -> Any:
    return spyre.memory_stats(_index(device_index))


def _stat(key: str) -> Callable[..., int]:
    def read(device_index: Any = None, /) -> int:
        return int(spyre.memory_stats(_index(device_index))[key])

    return read


def reset_peak_memory_stats(device_index: Any = None, /) -> None:
    spyre.reset_peak_memory_stats(_index(device_index))


def reset_accumulated_memory_stats(device_index: Any = None, /) -> None:
    spyre.reset_accumulated_memory_stats(_index(device_index))


def get_memory_info(device_index: Any = None, /) -> tuple[int, int]:
    return spyre.mem_get_info(_index(device_index))


def _nothing_cached() -> None:
    """empty_cache / empty_host_cache: the allocator caches nothing, pinned memory does
    not exist on spyre (docs/device.md)."""
    return None


SPYRE_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    "synchronize": synchronize,
    "set_device_index": set_device_index,
    "set_device_idx": set_device_index,
    "current_stream": current_stream,
    "set_stream": set_stream,
    "get_device_capability": get_device_capability,
    "memory_stats": memory_stats,
    "memory_allocated": _stat("allocated_bytes.all.current"),
    "max_memory_allocated": _stat("allocated_bytes.all.peak"),
    "memory_reserved": _stat("reserved_bytes.all.current"),
    "max_memory_reserved": _stat("reserved_bytes.all.peak"),
    "reset_peak_memory_stats": reset_peak_memory_stats,
    "reset_accumulated_memory_stats": reset_accumulated_memory_stats,
    "get_memory_info": get_memory_info,
    "empty_cache": _nothing_cached,
    "empty_host_cache": _nothing_cached,
}


def _delegating(original: Callable[..., Any], on_spyre: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def function(*args: Any, **kwargs: Any) -> Any:
        return (on_spyre if _on_spyre() else original)(*args, **kwargs)

    function.__spyre_delegating__ = True  # type: ignore[attr-defined]
    return function


def _opaque_to_dynamo() -> None:
    """Dynamo's frame evaluation skips the shims below, and all they call, as it skips the C++
    bindings other accelerators have: Dynamo asks for the current stream while it compiles,
    and converted 8 frames of these shims as user code at the first compilation of a process
    and again after every `torch._dynamo.reset()` (which the dependency recorder does per
    pair). Through torch's C bindings, so that importing the device does not import Dynamo."""
    from torch._C._dynamo.eval_frame import (
        _FrameAction,
        _FrameExecStrategy,
        set_code_exec_strategy,
    )

    skip = _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP)
    wrapper = _delegating(synchronize, synchronize).__code__  # shared by every wrapper
    for code in (wrapper, *(f.__code__ for f in SPYRE_IMPLEMENTATIONS.values())):
        set_code_exec_strategy(code, skip)


class _DeviceIndex(torch.accelerator.device_index):
    """``torch.accelerator.device_index(i)`` rejecting an index spyre does not have."""

    def __init__(self, device: int | None, /) -> None:
        if device is not None and _on_spyre():
            _index(device)
        super().__init__(device)


def install() -> None:
    for name, on_spyre in SPYRE_IMPLEMENTATIONS.items():
        for module in _MODULES:
            original = getattr(module, name, None)
            if original is not None and not getattr(original, "__spyre_delegating__", False):
                setattr(module, name, _delegating(original, on_spyre))
    if not issubclass(torch.accelerator.device_index, _DeviceIndex):
        torch.accelerator.device_index = _DeviceIndex  # type: ignore[misc]
    _opaque_to_dynamo()
