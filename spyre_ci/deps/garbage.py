"""When a recording worker's cycle collector runs, so finalizers are credited where they belong.

Left to its own timing, the collector frees an earlier pair's garbage in whatever window it
fires in, and the finalizers that run then (Dynamo's `CleanupHook` when a compiled frame is
freed, weakref callbacks) are credited to that window: 768 tests of 2.13 -> 2.14 showed
`CleanupHook.__call__` as run by their eager paths. So every window (a pair's eager or
compiled paths, the run that learns a memo's footprint) is fenced:

- `open_window`, before its probes open: the young garbage of the moment is freed (credited
  to none), and everything that exists is frozen (`gc.freeze()`, constant time): no
  collection inside the window, the collector's own or the one at its end, can reach it;
- `close_window`, at its end while its probes watch: a full collection, which sees only
  what the window allocated, so it frees all the window left unreachable (cycles promoted to
  the old generation during a long compile included) and its finalizers are the window's;
- `Collector.between_pairs`: every `full_every` pairs, the frozen objects are unfrozen and
  everything is collected (what earlier windows left alive and has died since, such as a
  compiled frame freed by the next pair's `torch._dynamo.reset()`, credited to none).

Full collections of the whole heap in every window cost 140 ms each after 90 pairs, growing
with the heap, and a whole-scope recording ran past 28 minutes (docs/benchmarks.md, eighth
session). This relies on CPython 3.11's generational collector (the project's Python).
"""

from __future__ import annotations

import gc

FULL_EVERY = 25  # pairs between two collections of everything: bounds what dead cycles hold


def open_window() -> None:
    gc.collect(1)
    gc.freeze()


def close_window() -> None:
    gc.collect()


class Collector:
    """The worker's schedule of whole-heap collections (one per process)."""

    def __init__(self, full_every: int = FULL_EVERY) -> None:
        self.full_every = full_every
        self.pairs = 0

    def between_pairs(self) -> None:
        self.pairs += 1
        if self.pairs % self.full_every == 0:
            gc.unfreeze()
            gc.collect()
