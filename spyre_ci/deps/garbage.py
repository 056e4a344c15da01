"""When a recording worker's cycle collector runs, so finalizers are credited where they belong.

Left to its own timing, the collector frees an earlier pair's garbage in whatever window it
fires in, and the finalizers that run then (Dynamo's `CleanupHook` when a compiled frame is
freed, weakref callbacks) are credited to that window: 768 tests of 2.13 -> 2.14 showed
`CleanupHook.__call__` as run by their eager paths. So:

- between pairs, outside any window, the young generations are collected (and, every
  `full_every` pairs, everything): what is left from before a window is then old;
- inside a window only the young generations are ever collected (automatic full collections
  are switched off), at the collector's own times and once more at the window's end, while
  its probes watch: such a collection sees only what the window allocated, so a finalizer
  it runs is the window's own;
- after the warm-up, what lives (torch, the OpInfo databases) is frozen: never scanned
  again, so the periodic full collection costs what later pairs left alive.

Full collections over an unfrozen, growing heap cost 140 ms each after 90 pairs (and more
later): run three times per pair, they made a whole-scope recording last over 28 minutes
(docs/benchmarks.md, eighth session).
"""

from __future__ import annotations

import gc

FULL_EVERY = 25  # pairs between two full collections: bounds what old cycles hold
_NEVER = 2**31 - 1  # a full-collection threshold the collector never reaches


def young() -> None:
    """Collect the young generations: objects allocated since the last collection of them."""
    gc.collect(1)


class Collector:
    """The worker's collection schedule (one per process)."""

    def __init__(self, full_every: int = FULL_EVERY) -> None:
        self.full_every = full_every
        self.pairs = 0

    def between_pairs(self) -> None:
        self.pairs += 1
        if self.pairs % self.full_every == 0:
            gc.collect()
        else:
            young()

    def settle(self) -> None:
        """After the warm-up: free what is garbage, freeze what lives, and from now on
        collect the oldest generation only between pairs. Frozen objects are never freed:
        the warm-up's compiled frame, still held until the next `torch._dynamo.reset()`,
        stays (a few hundred objects, once)."""
        gc.collect()
        gc.freeze()
        first, second, _ = gc.get_threshold()
        gc.set_threshold(first, second, _NEVER)
