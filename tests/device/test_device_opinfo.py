"""Every OpInfo x float16/bfloat16/float32 pair, on spyre against CPU (like test_compare_cpu).

Each pair must match CPU over its first MAX_SAMPLES sample inputs, or be listed under
`opinfo_exceptions` in torch_spyre_ref/capabilities.yaml with a category and a reason. A listed
pair must still fail over all its samples (so the list cannot go stale), except the categories
whose comparison is meaningless (uninitialized memory), which are skipped with their reason.
MAX_SAMPLES bounds the run to about 20-40 s on 2 cores; `python bench/bench_device.py --sweep`
compares every sample of every pair.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from torch_spyre_ref.capabilities import capabilities
from torch_spyre_ref.opinfo_compare import Status, compare_pair, dtype_name, sweep_pairs

MAX_SAMPLES = 2
ALL_SAMPLES = 10_000
NOT_COMPARABLE = {"uninitialized"}

PAIRS = list(sweep_pairs())


def _id(pair: tuple[Any, torch.dtype]) -> str:
    op, dtype = pair
    variant = f".{op.variant_test_name}" if op.variant_test_name else ""
    return f"{op.name}{variant}-{dtype_name(dtype)}"


def test_sweep_covers_the_op_database() -> None:
    ops = {(op.name, op.variant_test_name) for op, _ in PAIRS}
    assert len(ops) > 600 and len(PAIRS) > 1500


@pytest.mark.parametrize("pair", PAIRS, ids=[_id(p) for p in PAIRS])
def test_opinfo_matches_cpu(pair: tuple[Any, torch.dtype]) -> None:
    op, dtype = pair
    listed = capabilities().opinfo_exception(op.name, op.variant_test_name or "", dtype_name(dtype))
    if listed is not None and listed.category in NOT_COMPARABLE:
        pytest.skip(f"listed in capabilities.yaml ({listed.category}): {listed.reason}")
    if listed is not None:
        result = compare_pair(op, dtype, ALL_SAMPLES)
        assert result.status in (Status.MISMATCH, Status.ERROR), (
            f"{result.key} is listed in capabilities.yaml ({listed.category}: {listed.reason}) "
            f"but now matches CPU over {result.samples} samples: remove the entry"
        )
        return
    result = compare_pair(op, dtype, MAX_SAMPLES)
    assert result.status is Status.PASSED, f"{result.key}: {result.status.value}: {result.detail}"
