"""Memoized torch functions are cleared between pairs, so each recording sees them run, or,
for a constant memo kept filled, is credited with what it ran."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator

import pytest
import torch

from spyre_ci.deps.memos import (
    Footprint,
    MemoLedger,
    clear_torch_caches,
    is_constant,
    torch_caches,
)
from spyre_ci.deps.probes import PythonCalls, python_calls
from spyre_ci.deps.worker import observe


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


MEMO_MODULE = """
import functools
import torch

def helper():
    return torch.ones(2).sum()

@functools.cache
def inner_table():
    return helper()

@functools.cache
def table():
    return inner_table() + 1

@functools.lru_cache
def per_argument(x):
    return helper() + x

CALLS = []

@functools.cache
def once_only():
    CALLS.append(1)
    if len(CALLS) > 1:
        raise RuntimeError("already initialised")
    return helper()
"""


@pytest.fixture
def memo_module() -> Iterator[types.ModuleType]:
    """A module of the torch package (by name) with constant memos and one that takes an
    argument, as torch's own (trace_rules.get_torch_obj_rule_map, ...) are."""
    name = "torch._spyre_ci_test_memos"
    module = types.ModuleType(name)
    exec(compile(MEMO_MODULE, f"<{name}>", "exec"), module.__dict__)
    sys.modules[name] = module
    try:
        yield module
    finally:
        del sys.modules[name]


def _key(module: types.ModuleType, function: str) -> tuple[str, int, str]:
    code = getattr(module, function)
    code = getattr(code, "__wrapped__", code).__code__
    return (code.co_filename, code.co_firstlineno, code.co_qualname)


def test_a_constant_memo_stays_filled_and_every_pair_using_it_is_credited_with_its_code(
    memo_module: types.ModuleType,
) -> None:
    ledger = MemoLedger(observe=observe)

    def pair(work: Callable[[], object]) -> tuple[set[tuple[str, int, str]], Footprint]:
        before = ledger.before_pair()
        calls = PythonCalls()
        with python_calls(calls):
            work()
        return calls.code_keys(), ledger.credit(before, ledger.uses())

    first_ran, _ = pair(memo_module.table)
    second_ran, credited = pair(memo_module.table)
    helper, inner = _key(memo_module, "helper"), _key(memo_module, "inner_table")
    assert helper in first_ran  # the first pair filled the memo itself
    assert helper not in second_ran  # kept filled: the second pair did not run it ...
    assert memo_module.table.cache_info().misses == 1
    # ... and is credited with what it would have run, the inner memo's code included
    assert {helper, inner, _key(memo_module, "table")} <= credited.code
    assert {"ones", "sum"} <= credited.aten
    _, unused = pair(lambda: None)
    assert unused == Footprint()  # a pair that does not use the memo gets nothing of it


def test_a_memo_taking_arguments_is_still_cleared_before_each_pair(
    memo_module: types.ModuleType,
) -> None:
    ledger = MemoLedger(observe=observe)
    ledger.before_pair()
    memo_module.per_argument(1)
    assert memo_module.per_argument.cache_info().currsize == 1
    ledger.before_pair()
    assert memo_module.per_argument.cache_info().currsize == 0
    assert not is_constant(memo_module.per_argument) and is_constant(memo_module.table)


def test_a_memo_whose_second_run_raises_learns_no_footprint_and_stays_cleared(
    memo_module: types.ModuleType,
) -> None:
    ledger = MemoLedger(observe=observe)
    before = ledger.before_pair()
    memo_module.once_only()  # the pair fills it; the ledger's own run then raises
    ledger.credit(before, ledger.uses())
    assert memo_module.once_only.cache_info().currsize == 1
    ledger.before_pair()
    assert memo_module.once_only.cache_info().currsize == 0  # cleared: no footprint kept
