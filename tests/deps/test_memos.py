"""Memoized torch functions are cleared between pairs, so each recording sees them run."""

from __future__ import annotations

import torch

from spyre_ci.deps.memos import clear_torch_caches, torch_caches


def test_every_lru_cache_of_the_torch_package_is_found_and_cleared() -> None:
    caches = torch_caches()
    assert caches, "torch defines functools.lru_cache functions; none was found"
    assert all(c.__module__.startswith("torch") for c in caches)
    torch._prims_common.dtype_to_type(torch.float16)  # fill some caches
    filled = [c for c in caches if c.cache_info().currsize]
    assert clear_torch_caches() == len(caches)
    assert all(c.cache_info().currsize == 0 for c in filled + caches)
