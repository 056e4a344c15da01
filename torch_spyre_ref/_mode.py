"""Process-wide device state: strict mode and the device's random generator."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch


@dataclass
class DeviceState:
    strict: bool = False
    # Random ops on spyre draw from this generator (CPU-backed, so results equal CPU's for the
    # same seed), not from the CPU default one: seeding or drawing on one device leaves the
    # other's stream untouched, as on real accelerators.
    random: torch.Generator = field(default_factory=lambda: torch.Generator(device="cpu"))
    lock: threading.Lock = field(default_factory=threading.Lock)


STATE = DeviceState()

# Per-thread count of active ``strict_suspended()`` blocks: suspending strict mode (to print or
# compare tensors on the host) affects only the calling thread, never STATE.strict.
_LOCAL = threading.local()


def generator() -> torch.Generator:
    return STATE.random


def set_strict(enabled: bool) -> None:
    """Enforce the capability file (and fp16 emulation) on every spyre op, process-wide."""
    STATE.strict = bool(enabled)


def is_strict() -> bool:
    return STATE.strict


def strict_active() -> bool:
    """Whether strict mode applies to an op run by the calling thread: it is on process-wide and
    this thread has not suspended it."""
    return STATE.strict and not getattr(_LOCAL, "suspended", 0)


@contextlib.contextmanager
def strict_suspended() -> Iterator[None]:
    """Suspend strict mode for the calling thread only (nests; other threads are unaffected)."""
    _LOCAL.suspended = getattr(_LOCAL, "suspended", 0) + 1
    try:
        yield
    finally:
        _LOCAL.suspended -= 1


@contextlib.contextmanager
def strict_mode(enabled: bool = True) -> Iterator[None]:
    previous = STATE.strict
    STATE.strict = enabled
    try:
        yield
    finally:
        STATE.strict = previous
