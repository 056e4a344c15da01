"""A decomposition whose edit matters only for some values of a parameter is registered for
an op: a reference calling that op with such a value (`aten.constant_pad_nd(a, [1, 1],
2.0)`) runs it under TorchRefsMode, so the reference's own tests are reached
(selection.links.argument_reach, selection.links.refs_mode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.selection import test_refs_mode_reach as refs
from tests.support.observed_runs import linked, manifest_file, select_head
from tests.support.python_refs import add_python_refs
from tests.support.upstream_library import DECOMP_INIT
from tests.support.upstream_repo import MANIFEST, UpstreamRepo, build_upstream

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
    repo = build_upstream(tmp_path_factory.mktemp("remote") / "pytorch")
    repo.reset()
    passing = refs.REFS.replace(
        "aten.constant_pad_nd(a, [1, 1])", "aten.constant_pad_nd(a, [1, 1], 2.0)"
    )
    assert passing != refs.REFS
    repo.write("torch/_refs/__init__.py", passing)
    repo.write("torch/_refs/nn/__init__.py", "")
    repo.write("torch/_refs/nn/functional/__init__.py", refs.REFS_NN)
    native = "torchgen/packaged/ATen/native/native_functions.yaml"
    repo.write(native, repo.read(native) + refs.NATIVE)
    repo.write("torch/_decomp/__init__.py", DECOMP_INIT)
    repo.write("torch/_decomp/decompositions.py", DECOMPOSITIONS)
    repo.write("torch/_prims/__init__.py", "")
    repo.write("torch/_prims_common/__init__.py", refs.PRIMS_COMMON)
    repo.write("torch/_prims/context.py", refs.CONTEXT)
    add_python_refs(repo, refs.REF_DB, refs.TEMPLATE)
    repo.edit(
        "test/test_ops.py",
        "import torch\n",
        "import torch\nfrom torch._prims.context import TorchRefsMode\n",
    )
    repo.base = repo.commit("references, a decomposition branching on its value, the ref tests")
    return repo


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = MANIFEST.replace(
        "            - TestCommon::test_plain\n", "            - TestCommon::test_python_ref\n"
    ).replace("      - exp\n", "      - exp\n" + "".join(f"      - {op}\n" for op in refs.REFS_OPS))
    return manifest_file(tmp_path_factory.mktemp("manifests"), text)


def test_a_reference_passing_the_changed_value_to_the_op_runs_its_decomposition(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change("torch/_decomp/decompositions.py", ") + value", ") - value")
    state = select_head(upstream, manifest, head, tmp_path)
    assert ("test_python_ref", "_refs.padded") in {(i.template, i.op) for i in linked(state)}
