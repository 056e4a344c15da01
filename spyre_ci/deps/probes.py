"""What one unit of work executed: the ATen ops it dispatched and the Python code it ran.

Imports torch. Both probes cover the autograd engine's device threads too, which is where
backward runs for a PrivateUse1 tensor (only CPU backward runs on the calling thread):

- ATen ops come from the Kineto profiler restricted to CPU activity with overload names
  captured (`RecordFunction` fires in the dispatcher for every op, so CompositeImplicitAutograd
  ops such as `aten::linear` are seen, not only what reaches the backend); the profiler's
  thread-local state is propagated into the autograd threads by the engine.
- Python code comes from cProfile's C profiler (`_lsprof`): one per thread. The calling
  thread's is enabled around the work; a thread that runs a hook (`adopt_thread`, called from
  a tensor hook at the start of backward) gets its own, which replaces the one an earlier unit
  of work left there. cProfile rather than `sys.setprofile` or coverage: see docs/deps.md
  (measured in bench/bench_deps.py).
"""

from __future__ import annotations

import cProfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch._C._profiler import _ExperimentalConfig
from torch.autograd import (
    ProfilerActivity,
    ProfilerConfig,
    ProfilerState,
    _disable_profiler,
    _enable_profiler,
    _prepare_profiler,
)

from spyre_ci.deps.symbols import CodeKey

_ACTIVITIES = {ProfilerActivity.CPU}


def _profiler_config() -> ProfilerConfig:
    experimental = _ExperimentalConfig(capture_overload_names=True)
    return ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, experimental)


def aten_name(name: str, overload: str) -> str | None:
    """`aten::add` + `Tensor` -> `add.Tensor` (Target.aten spelling); None for non-ATen events."""
    if not name.startswith("aten::"):
        return None
    base = name.removeprefix("aten::")
    return f"{base}.{overload}" if overload and overload != "default" else base


@contextmanager
def aten_ops(into: set[str]) -> Iterator[None]:
    """Adds to `into` the ATen ops dispatched inside the block (any thread it reaches)."""
    config = _profiler_config()
    _prepare_profiler(config, _ACTIVITIES)
    _enable_profiler(config, _ACTIVITIES)
    try:
        yield
    finally:
        result = _disable_profiler()
        for event in result.events():
            name = aten_name(event.name(), event.overload_name())
            if name is not None:
                into.add(name)


_local = threading.local()


@dataclass
class PythonCalls:
    """Code objects executed in the calling thread and in the threads that adopt it."""

    profilers: list[cProfile.Profile] = field(default_factory=list)
    home: int = 0  # the calling thread, profiled by `python_calls` itself

    def adopt_thread(self) -> None:
        """Profile the current (non-calling) thread for this collection from now on."""
        if threading.get_ident() == self.home:
            return
        if getattr(_local, "owner", None) is self:
            return
        previous = getattr(_local, "profiler", None)
        if previous is not None:
            previous.disable()
        # Let the last collection (and its profilers) go before this one starts: their
        # stats hold the code objects they saw (an earlier pair's compiled frames among
        # them), and freeing those runs finalizers (Dynamo's CleanupHook) that are no work
        # of this pair. No local may keep it past this line.
        _local.owner = _local.profiler = previous = None
        profiler = cProfile.Profile(subcalls=False, builtins=False)
        self.profilers.append(profiler)
        _local.owner, _local.profiler = self, profiler
        profiler.enable()

    def code_keys(self) -> set[CodeKey]:
        keys: set[CodeKey] = set()
        for profiler in list(self.profilers):
            for entry in profiler.getstats():
                code = entry.code
                if not isinstance(code, str):
                    keys.add((code.co_filename, code.co_firstlineno, code.co_qualname))
        return keys


_active: list[PythonCalls] = []


def active_collection() -> PythonCalls | None:
    """The collection `python_calls` is filling, for hooks that run on other threads."""
    return _active[-1] if _active else None


@contextmanager
def python_calls(into: PythonCalls) -> Iterator[None]:
    profiler = cProfile.Profile(subcalls=False, builtins=False)
    into.profilers.append(profiler)
    into.home = threading.get_ident()
    _active.append(into)
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        _active.pop()


def adopt_on_backward(tensors: list[torch.Tensor]) -> None:
    """Make the thread that runs these tensors' backward adopt the active collection."""
    collection = active_collection()
    if collection is None:
        return

    def hook(grad: torch.Tensor) -> torch.Tensor:
        collection.adopt_thread()
        return grad

    for tensor in tensors:
        if tensor.requires_grad and tensor.grad_fn is not None:
            tensor.register_hook(hook)
