"""Another device's package (`torch/cuda/`): what code that runs here calls from it is linked
like any library code (`torch.cuda.is_available()` runs on every device); what only that
device's branches call, or nothing calls, has no effect here, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.state import PipelineState
from tests.support.observed_runs import linked_ops
from tests.support.sample_helpers import select_edit_through_samples
from tests.support.upstream_repo import UpstreamRepo

CUDA = "torch/cuda/__init__.py"
HELPERS = "torch/_probing.py"

BASE_CUDA = """def is_available():
    return False


def memory_allocated():
    return 0


def unused():
    return 1
"""
PROBING = """import torch


def probe(x):
    if torch.cuda.is_available():
        return x
    return x


def leak_checked(x):
    if x.is_cuda:
        torch.cuda.memory_allocated()
    return x
"""


def _select(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str
) -> PipelineState:
    # add's samples ask whether CUDA is there, on every device; mul's check CUDA memory
    # only on CUDA tensors
    samples = (
        {CUDA: BASE_CUDA, HELPERS: PROBING},
        "torch._probing",
        {"add": "probe", "mul": "leak_checked"},
    )
    return select_edit_through_samples(upstream, manifest, tmp_path, samples, (CUDA, old, new))


def test_a_function_code_for_every_device_calls_is_linked(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = _select(upstream, manifest, tmp_path, "return False", "return True")
    assert {op for op, _ in linked_ops(state)} == {"add"}


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("return 0", "return 1", "reached only through another device's code"),
        ("return 1", "return 2", "another device's package, and no code that runs here calls it"),
    ],
    ids=["under-a-cuda-branch", "called-by-nothing"],
)
def test_what_only_that_device_runs_has_no_effect(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str, why: str
) -> None:
    state = _select(upstream, manifest, tmp_path, old, new)
    assert not state.candidates
    assert state.mapped is not None
    assert any(why in said for said in state.mapped.no_effect), state.mapped.no_effect
