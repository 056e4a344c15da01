"""The ref tests run references under TorchRefsMode, which sends `torch.X(...)` and the Tensor
methods its table names (`a // b`) to references: end to end in an upstream-shaped repository.

- a changed helper of `_refs.sigmoid` reaches the ref tests of `glu`, whose reference calls
  `torch.sigmoid` (the mode runs `_refs.sigmoid` there), though only `sigmoid` calls it;
- a changed decomposition reaches the ref tests of the reference calling its op as
  `aten.<op>` (the mode runs the decomposition table's entry there);
- a changed `_refs.mul` reaches the ref tests of the references applying `*` to what may be
  a tensor (the mode sees `Tensor.mul`), and of those calling such a reference as a Python
  function (`sigmoid` calls `_scaled`, which multiplies);
- a changed `_refs.floor_divide` reaches the ref tests of the reference applying `//`, which
  the table sends to it, and no others: the table is data the mode looks up, not code that
  runs what it names (followed as calls, it reached every ref test through the template's
  `TorchRefsMode()`: upstream, 851 `test_python_ref` instances for a `_refs.floor` edit).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.observed_runs import linked, manifest_file, select_from, select_head
from tests.support.python_refs import add_python_refs
from tests.support.upstream_library import DECOMP_INIT
from tests.support.upstream_repo import INTERNAL, MANIFEST, UpstreamRepo, build_upstream

DB = f"{INTERNAL}/common_methods_invocations.py"
REFS = """
import torch

aten = torch.ops.aten


def padded(a):
    return aten.constant_pad_nd(a, [1, 1])


def _scaled(a):
    return a * 0.5


def sigmoid(a):
    return 1 / (1 + torch.exp(-_scaled(a)))


def floor_divide(a, b):
    return torch.floor(a / b)


def mul(a, b):
    return torch._prims.mul(a, b)


def unreached(a):
    return torch._prims_common.helper(a)
"""
PRIMS_COMMON = """
def helper(a):
    return a
"""
REFS_NN = """
import torch


def glu(a):
    return a * torch.sigmoid(a)


def halves(a):
    return a // 2
"""
DECOMPOSITIONS = """
import torch
from torch._decomp import register_decomposition

aten = torch._ops.ops.aten


@register_decomposition(aten.constant_pad_nd)
def constant_pad_nd(a, pad, value=0):
    return torch.sigmoid(a) + value
"""
NATIVE = """
- func: constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor
  dispatch:
    CompositeImplicitAutograd: constant_pad_nd
"""
CONTEXT = """
import torch


def torch_to_refs_map():
    return {
        torch.Tensor.__floordiv__: torch._refs.floor_divide,
        torch.sigmoid: torch._refs.sigmoid,
    }


class TorchRefsMode:
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return torch_to_refs_map().get(func, func)(*args, **(kwargs or {}))
"""
REF_DB = """
python_ref_db = [
    PythonRefInfo("_refs.sigmoid", torch_opinfo_name="mul", op=torch._refs.sigmoid),
    PythonRefInfo("_refs.nn.functional.glu", torch_opinfo_name="mul", op=torch._refs.nn.functional.glu),
    PythonRefInfo("_refs.nn.functional.halves", torch_opinfo_name="mul", op=torch._refs.nn.functional.halves),
    PythonRefInfo("_refs.padded", torch_opinfo_name="mul", op=torch._refs.padded),
]
"""
TEMPLATE = """
    @ops(python_ref_db)
    def test_python_ref(self, device, dtype, op):
        with TorchRefsMode():
            op.op(torch.ones(2, device=device, dtype=dtype))

    @ops(op_db)
    def test_skipped_by_manifest("""
REFS_OPS = (
    "_refs.sigmoid",
    "_refs.nn.functional.glu",
    "_refs.nn.functional.halves",
    "_refs.padded",
)


def refs_upstream(
    root: Path, refs: str = REFS, decompositions: str = DECOMPOSITIONS
) -> UpstreamRepo:
    """The upstream repository with references, their ref tests under TorchRefsMode, and a
    decomposition table (`refs`, `decompositions`: those modules' text)."""
    repo = build_upstream(root / "pytorch")
    repo.reset()
    repo.write("torch/_refs/__init__.py", refs)
    repo.write("torch/_refs/nn/__init__.py", "")
    repo.write("torch/_refs/nn/functional/__init__.py", REFS_NN)
    native = "torchgen/packaged/ATen/native/native_functions.yaml"
    repo.write(native, repo.read(native) + NATIVE)
    repo.write("torch/_decomp/__init__.py", DECOMP_INIT)
    repo.write("torch/_decomp/decompositions.py", decompositions)
    repo.write("torch/_prims/__init__.py", "")
    repo.write("torch/_prims_common/__init__.py", PRIMS_COMMON)
    repo.write("torch/_prims/context.py", CONTEXT)
    add_python_refs(repo, REF_DB, TEMPLATE)
    repo.edit(
        "test/test_ops.py",
        "import torch\n",
        "import torch\nfrom torch._prims.context import TorchRefsMode\n",
    )
    repo.base = repo.commit("references and the ref tests")
    return repo


def refs_manifest(root: Path) -> Path:
    """The fixture manifest reusing the ref tests of every reference (REFS_OPS)."""
    text = MANIFEST.replace(
        "            - TestCommon::test_plain\n", "            - TestCommon::test_python_ref\n"
    ).replace("      - exp\n", "      - exp\n" + "".join(f"      - {op}\n" for op in REFS_OPS))
    return manifest_file(root, text)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    return refs_upstream(tmp_path_factory.mktemp("remote"))


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return refs_manifest(tmp_path_factory.mktemp("manifests"))


def _ref_tests(upstream: UpstreamRepo, manifest: Path, head: str, tmp_path: Path) -> set[str]:
    state = select_head(upstream, manifest, head, tmp_path)
    return {i.op or "" for i in linked(state) if i.template == "test_python_ref"}


def test_the_scope_holds_every_references_ref_tests(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """What the other tests leave out is left out by the selection, not by the scope."""
    head = upstream.change("torch/_prims/context.py", "torch.sigmoid: ", "torch.special.expit: ")
    assert _ref_tests(upstream, manifest, head, tmp_path) == set(REFS_OPS)


def test_a_helper_of_a_reference_reaches_the_ref_tests_of_its_callers_under_the_mode(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """glu calls `torch.sigmoid`; `padded` calls `aten.constant_pad_nd`, whose decomposition
    (run under the mode too) calls `torch.sigmoid`."""
    head = upstream.change("torch/_refs/__init__.py", "a * 0.5", "a * 0.25")
    reached = _ref_tests(upstream, manifest, head, tmp_path)
    assert reached == {"_refs.sigmoid", "_refs.nn.functional.glu", "_refs.padded"}


def test_a_reference_the_table_renames_reaches_the_references_applying_its_operator(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change("torch/_refs/__init__.py", "torch.floor(a / b)", "torch.ceil(a / b)")
    assert _ref_tests(upstream, manifest, head, tmp_path) == {"_refs.nn.functional.halves"}


def test_a_decomposition_reaches_the_ref_tests_of_a_reference_calling_its_aten_op(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change("torch/_decomp/decompositions.py", ") + value", ") - value")
    assert _ref_tests(upstream, manifest, head, tmp_path) == {"_refs.padded"}


def test_an_operator_the_mode_sees_by_its_methods_name_reaches_that_reference(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change("torch/_refs/__init__.py", "torch._prims.mul(a, b)", "a")
    state = select_head(upstream, manifest, head, tmp_path)
    reached = {i.op for i in linked(state) if i.template == "test_python_ref"}
    # padded: its op's decomposition calls torch.sigmoid, which multiplies (in _scaled)
    assert reached == {"_refs.sigmoid", "_refs.nn.functional.glu", "_refs.padded"}
    # nothing calls `mul` by name: what else may run it is not known, so its blind spot and
    # canary stay beside the links
    assert any("mul modified: linked to no reused test statically" in b for b in state.blind_spots)


def test_code_only_an_untested_reference_runs_stays_a_blind_spot(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """No test reaches `unreached`, by name or under the mode: the helper it calls is linked
    to nothing, so it is a blind spot with its canary, never a silent "no effect"."""
    head = upstream.change("torch/_prims_common/__init__.py", "return a", "return -a")
    state = select_head(upstream, manifest, head, tmp_path)
    assert any(
        "helper modified: linked to no reused test statically" in b for b in state.blind_spots
    )
    assert state.candidates  # its canary


def test_a_name_a_references_all_loses_reaches_the_ref_tests_calling_it_under_the_mode(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """TorchRefsMode maps each name `torch._refs.__all__` lists: dropping `sigmoid` sends
    glu's `torch.sigmoid` (and the decomposition `padded` runs) back to ATen under the mode.
    Reordering the list changes nothing."""
    listed = REFS + '\n__all__ = ["sigmoid", "mul", "floor_divide"]\n'
    original = upstream.base
    upstream.reset()
    upstream.write("torch/_refs/__init__.py", listed)
    upstream.base = upstream.commit("the references list their names")
    try:
        dropped = upstream.change("torch/_refs/__init__.py", '"sigmoid", "mul"', '"mul"')
        state = select_from(upstream, manifest, upstream.base, dropped, tmp_path)
        reached = {i.op for i in linked(state) if i.template == "test_python_ref"}
        assert reached == {"_refs.nn.functional.glu", "_refs.padded"}
        swapped = upstream.change("torch/_refs/__init__.py", '"sigmoid", "mul"', '"mul", "sigmoid"')
        assert not select_from(upstream, manifest, upstream.base, swapped, tmp_path).candidates
    finally:
        upstream.base = original
        upstream.reset()
