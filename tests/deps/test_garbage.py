"""The recording worker's collection fences (spyre_ci.deps.garbage), in this process."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from spyre_ci.deps.garbage import Collector, close_window, open_window


class _Node:
    cycle: object


def _cycle(freed: list[str]) -> _Node:
    node = _Node()
    node.cycle = node  # only the cycle collector frees it
    weakref.finalize(node, freed.append, "freed")
    return node


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    enabled = gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def test_garbage_from_before_a_window_is_out_of_reach_of_every_collection_inside() -> None:
    freed: list[str] = []
    node = _cycle(freed)
    gc.collect()  # old now: a young collection before the window does not free it
    del node
    open_window()
    gc.collect()  # the collector, however old the generation it collects
    close_window()
    assert freed == []
    collector = Collector(full_every=3)
    collector.between_pairs()
    collector.between_pairs()
    assert freed == []
    collector.between_pairs()  # the third pair: everything
    assert freed == ["freed"]


def test_young_garbage_is_freed_as_a_window_opens_before_it_can_count() -> None:
    freed: list[str] = []
    gc.disable()
    node = _cycle(freed)
    del node
    assert freed == []  # the collector is off: nothing freed it yet
    open_window()
    assert freed == ["freed"]


def test_a_window_frees_all_it_left_unreachable_even_what_grew_old_inside_it() -> None:
    freed: list[str] = []
    open_window()
    node = _cycle(freed)
    gc.collect()
    gc.collect()  # a long compile: the collector has promoted it to the old generation
    del node
    close_window()
    assert freed == ["freed"]
