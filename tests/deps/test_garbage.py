"""The recording worker's collection schedule (spyre_ci.deps.garbage), in this process."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from spyre_ci.deps.garbage import Collector


class _Node:
    cycle: object


def _old_cycle(freed: list[str]) -> None:
    node = _Node()
    node.cycle = node  # only the cycle collector frees it
    weakref.finalize(node, freed.append, "freed")
    gc.collect()  # it survives a collection: old now


@pytest.fixture
def settled() -> Iterator[Collector]:
    saved = gc.get_threshold()
    collector = Collector(full_every=5)
    collector.settle()
    try:
        yield collector
    finally:
        gc.unfreeze()
        gc.set_threshold(*saved)


def test_settling_freezes_what_lives(settled: Collector) -> None:
    assert gc.get_freeze_count() > 0


def test_an_old_cycle_is_freed_only_between_pairs_never_by_what_a_window_allocates(
    settled: Collector,
) -> None:
    freed: list[str] = []
    _old_cycle(freed)
    for _ in range(20):  # far past the young generations' thresholds
        garbage = [[i] for i in range(50_000)]
        del garbage
    assert freed == []  # no collection on the collector's own reached it
    for _ in range(4):
        settled.between_pairs()  # young collections: it is old
    assert freed == []
    settled.between_pairs()  # the fifth pair: a full collection
    assert freed == ["freed"]


def test_young_garbage_is_freed_between_pairs(settled: Collector) -> None:
    freed: list[str] = []
    gc.disable()
    try:
        node = _Node()
        node.cycle = node
        weakref.finalize(node, freed.append, "freed")
        del node
        settled.between_pairs()
    finally:
        gc.enable()
    assert freed == ["freed"]
