"""Module-level names of a database file that are code, not entry lists: a sample-inputs
function built by a call (`reference_inputs_bucketize = partial(sample_inputs_bucketize,
...)`) and a dict of defaults a sample function reads. An edit of one reaches the entries
that use it; only real entry lists (`op_db`, `unary_ufuncs = [...]`) are not uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.observed_runs import linked_ops, manifest_file, select_head, upstream_replacing
from tests.support.upstream_repo import INTERNAL, UpstreamRepo

DB = f"{INTERNAL}/common_methods_invocations.py"

NAMES = """
from functools import partial

_ADD_DEFAULTS = {"size": 3, "other": 2}


def _sample_inputs_mul(op_info, device, dtype, *, size):
    yield SampleInput(torch.ones(size, device=device, dtype=dtype), args=(3,))


def sample_inputs_add(op_info, device, dtype):
    yield SampleInput(
        torch.ones(_ADD_DEFAULTS["size"], device=device, dtype=dtype),
        args=(_ADD_DEFAULTS["other"],),
    )


sample_inputs_mul = partial(_sample_inputs_mul, size=4)
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    return upstream_replacing(
        tmp_path_factory.mktemp("upstream"), DB, "def sample_inputs_add(",
        "def sample_inputs_unary(", NAMES.lstrip("\n") + "\n\n",
        "module-level names in the database file",
    )  # fmt: skip


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return manifest_file(tmp_path_factory.mktemp("manifests"))


@pytest.mark.parametrize(
    ("old", "new", "op"),
    [
        ('"size": 3', '"size": 5', "add"),  # a dict a sample function reads
        ("size=4)", "size=6)", "mul"),  # a partial passed as sample_inputs_func
        ("torch.ones(size, device", "torch.zeros(size, device", "mul"),  # the function in it
    ],
)
def test_an_edit_of_a_module_level_name_reaches_the_entries_using_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str, op: str
) -> None:
    state = select_head(upstream, manifest, upstream.change(DB, old, new), tmp_path)
    assert {(op, "float16"), (op, "float32")} <= linked_ops(state)
    assert state.mapped is not None and not state.mapped.no_effect
