"""The ``torch.spyre`` module: device management, memory statistics, streams and events.

The emulator has one device and executes every op synchronously on the host, so a stream is an
ordered queue that is always drained and an event records the moment its stream reached it.
That is a trivial but correct implementation of the ordering contract: work submitted before
``Event.record`` has finished when the event is recorded.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from torch_spyre_ref import _mode
from torch_spyre_ref._allocator import STATS
from torch_spyre_ref.stick import STICK_BYTES

CORES = 32
SCRATCHPAD_BYTES_PER_CORE = 2 * 1024 * 1024
TOTAL_MEMORY_BYTES = 128 * 1024**3
_DEVICE_COUNT = 1
_current_device = 0


@dataclass(frozen=True)
class SpyreDeviceProperties:
    name: str
    cores: int
    scratchpad_bytes_per_core: int
    stick_bytes: int
    total_memory: int

    @property
    def scratchpad_bytes(self) -> int:
        return self.cores * self.scratchpad_bytes_per_core


def _index(device: Any = None) -> int:
    if device is None:
        return _current_device
    if isinstance(device, int):
        index = device
    else:
        parsed = torch.device(device)
        if parsed.type != "spyre":
            raise ValueError(f"expected a spyre device, got {parsed}")
        index = _current_device if parsed.index is None else parsed.index
    _check_index(index)
    return index


def _check_index(index: int) -> None:
    """The one device-index validator: reject an index the emulator does not have (as other
    backends reject an invalid device ordinal), naming the index and the device count."""
    if index and not 0 <= index < _DEVICE_COUNT:  # index 0 always exists
        raise RuntimeError(
            f"spyre: invalid device ordinal {index}: invalid spyre device index {index} "
            f"(spyre:{index}), torch.spyre.device_count() is {_DEVICE_COUNT}"
        )


def check_device_index(device: torch.device | None) -> None:
    """Every allocation names its device: reject an invalid index instead of allocating on device
    0. ``None`` and index ``None``/0 are always valid and return at once (the allocation path)."""
    if device is not None and device.index:
        _check_index(device.index)


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _lazy_init() -> None:
    return None


def _is_in_bad_fork() -> bool:
    return False


def device_count() -> int:
    return _DEVICE_COUNT


def current_device() -> int:
    return _current_device


def set_device(device: Any) -> None:
    global _current_device
    _current_device = _index(device)


def synchronize(device: Any = None) -> None:
    """Wait for all work on the device: the emulator runs synchronously, so only validate."""
    _index(device)


def get_device_properties(device: Any = None) -> SpyreDeviceProperties:
    _index(device)
    return SpyreDeviceProperties(
        name="Spyre (CPU emulation)",
        cores=CORES,
        scratchpad_bytes_per_core=SCRATCHPAD_BYTES_PER_CORE,
        stick_bytes=STICK_BYTES,
        total_memory=TOTAL_MEMORY_BYTES,
    )


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


# --- memory: padded bytes of live device allocations --------------------------------------------


def memory_allocated(device: Any = None) -> int:
    _index(device)
    return STATS.allocated


def max_memory_allocated(device: Any = None) -> int:
    _index(device)
    return STATS.peak


def reset_peak_memory_stats(device: Any = None) -> None:
    _index(device)
    STATS.reset_peak()


def memory_reserved(device: Any = None) -> int:
    """Bytes held for the device: no cache, so the allocated bytes."""
    return memory_allocated(device)


def max_memory_reserved(device: Any = None) -> int:
    return max_memory_allocated(device)


def reset_accumulated_memory_stats(device: Any = None) -> None:
    _index(device)
    STATS.reset_accumulated()


def empty_cache() -> None:
    """Nothing is cached: every free returns the memory at once."""
    return None


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device, as ``torch.cuda.mem_get_info``."""
    used = memory_allocated(device)
    return TOTAL_MEMORY_BYTES - used, TOTAL_MEMORY_BYTES


def memory_stats(device: Any = None) -> OrderedDict[str, int]:
    """The statistics a caching allocator reports, under the same keys (sorted, as
    ``torch.cuda.memory_stats``): bytes and counts, each current/peak/allocated/freed."""
    _index(device)
    with STATS.lock:
        by_bytes = (STATS.allocated, STATS.peak, STATS.allocated_total, STATS.freed_total)
        by_count = (STATS.live, STATS.peak_live, STATS.allocations, STATS.frees)
    stats: dict[str, int] = {"num_alloc_retries": 0, "num_ooms": 0}
    stats["num_device_alloc"], stats["num_device_free"] = by_count[2], by_count[3]
    for family, values in (
        ("allocated_bytes", by_bytes),
        ("reserved_bytes", by_bytes),  # nothing cached: reserved is allocated
        ("active_bytes", by_bytes),
        ("allocation", by_count),
        ("segment", by_count),
        ("active", by_count),
    ):
        for metric, value in zip(("current", "peak", "allocated", "freed"), values, strict=True):
            stats[f"{family}.all.{metric}"] = value
    return OrderedDict(sorted(stats.items()))


# --- random numbers -----------------------------------------------------------------------------


def manual_seed(seed: int) -> None:
    _mode.generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    _mode.generator().seed()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    return _mode.generator().initial_seed()


def get_rng_state(device: Any = None) -> torch.Tensor:
    return _mode.generator().get_state()


def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
    _mode.generator().set_state(state)


# --- autocast -----------------------------------------------------------------------------------


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


# --- streams and events -------------------------------------------------------------------------


class Event(torch.Event):
    """A ``torch.Event`` on spyre that records the host time its stream reached it (every op
    has finished by then: the emulator is synchronous), so ``elapsed_time`` works as on CUDA."""

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> Event:
        return super().__new__(cls, "spyre", enable_timing=enable_timing)

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.enable_timing = enable_timing
        self._recorded_at: float | None = None

    def record(self, stream: torch.Stream | None = None) -> None:
        _stream_of(stream).synchronize()
        self._recorded_at = time.perf_counter()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait(self, stream: torch.Stream | None = None) -> None:
        _stream_of(stream).wait_event(self)

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds between this event and ``end_event``, like ``torch.cuda.Event``."""
        end_at = getattr(end_event, "_recorded_at", None)
        if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
            raise RuntimeError("elapsed_time needs both events created with enable_timing=True")
        if self._recorded_at is None or end_at is None:
            raise RuntimeError("elapsed_time needs both events to have been recorded")
        return float((end_at - self._recorded_at) * 1000.0)


class Stream(torch.Stream):
    """A ``torch.Stream`` on spyre: an in-order queue of device work, drained as soon as work
    is submitted. Streams are told apart by identity (the C++ side gives every spyre stream
    the default id: the Python device guard cannot create streams)."""

    def __new__(cls, device: Any = None, priority: int = 0) -> Stream:
        return super().__new__(cls, device=torch.device("spyre", _index(device)), priority=0)

    def __init__(self, device: Any = None, priority: int = 0) -> None:
        self.priority = priority

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: torch.Event) -> None:
        event.synchronize()

    def wait_stream(self, stream: torch.Stream) -> None:
        stream.synchronize()

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        event = event or Event()
        event.record(self)
        return event

    def __enter__(self) -> Stream:
        self._previous = current_stream()
        set_stream(self)
        return self

    def __exit__(self, *exc: object) -> None:
        set_stream(self._previous)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:  # torch.Stream's own compares ids: all are 0
        return self is not other

    def __hash__(self) -> int:
        return id(self)


def _stream_of(stream: torch.Stream | None) -> torch.Stream:
    return stream if stream is not None else current_stream()


# Made at first use: a torch.Stream on spyre needs the device registered (after import).
_default_stream: Stream | None = None
_current_stream: torch.Stream | None = None


def default_stream(device: Any = None) -> Stream:
    global _default_stream
    _index(device)
    if _default_stream is None:
        _default_stream = Stream(0)
    return _default_stream


def current_stream(device: Any = None) -> torch.Stream:
    _index(device)
    return _current_stream if _current_stream is not None else default_stream()


@contextlib.contextmanager
def stream(s: torch.Stream | None) -> Iterator[None]:
    if s is None:
        yield
        return
    previous = current_stream()
    set_stream(s)
    try:
        yield
    finally:
        set_stream(previous)


def set_stream(s: torch.Stream) -> None:
    """Make ``s`` (a spyre ``torch.Stream``, e.g. a ``torch.spyre.Stream``) current."""
    global _current_stream
    if s.device.type != "spyre":
        raise ValueError(f"expected a spyre stream, got one on {s.device}")
    _index(s.device)
    _current_stream = s


class device:
    """Context manager selecting the current spyre device (there is one: index 0)."""

    def __init__(self, device: Any) -> None:
        self.index = _index(device)
        self.previous = _current_device

    def __enter__(self) -> None:
        self.previous = _current_device
        set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        set_device(self.previous)
