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


def test_the_fake_tensor_dispatch_cache_is_cleared_so_a_second_trace_runs_the_meta_kernel() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    def trace() -> None:
        with FakeTensorMode():
            torch.ones(3, 4) @ torch.ones(4, 5)

    clear_torch_caches()
    trace()
    before = FakeTensorMode.cache_info()
    assert FakeTensorMode.cache, "a fake matmul should fill the dispatch cache"
    trace()
    assert FakeTensorMode.cache_info().hits > before.hits  # the second trace skipped the kernel
    clear_torch_caches()
    assert not FakeTensorMode.cache
    trace()
    assert FakeTensorMode.cache_info().hits == 0  # run again, not served from the cache
