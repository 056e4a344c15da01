"""A decomposition whose edit matters only for some values of a parameter is registered for
an op: a reference calling that op with such a value (`aten.constant_pad_nd(a, [1, 1],
2.0)`) runs it under TorchRefsMode, so the reference's own tests are reached
(selection.links.argument_reach, selection.links.refs_mode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.selection import test_refs_mode_reach as refs
from tests.support.observed_runs import linked, select_head
from tests.support.upstream_repo import UpstreamRepo

DECOMPOSITIONS = """
import torch
from torch._decomp import register_decomposition

aten = torch._ops.ops.aten


@register_decomposition(aten.constant_pad_nd)
def constant_pad_nd(a, pad, value=None):
    if value is None:
        return torch.sigmoid(a)
    return torch.sigmoid(a) + value
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    passing = refs.REFS.replace(
        "aten.constant_pad_nd(a, [1, 1])", "aten.constant_pad_nd(a, [1, 1], 2.0)"
    )
    assert passing != refs.REFS
    return refs.refs_upstream(tmp_path_factory.mktemp("remote"), passing, DECOMPOSITIONS)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return refs.refs_manifest(tmp_path_factory.mktemp("manifests"))


def test_a_reference_passing_the_changed_value_to_the_op_runs_its_decomposition(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change("torch/_decomp/decompositions.py", ") + value", ") - value")
    state = select_head(upstream, manifest, head, tmp_path)
    assert ("test_python_ref", "_refs.padded") in {(i.template, i.op) for i in linked(state)}
