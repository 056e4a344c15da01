"""Code that implements an op, reached the way it runs (misses of the mutation benchmark):

- a decomposition or meta kernel runs where the op is traced, and the op is traced wherever
  the op under test's library code calls it: `F.smooth` calling `torch._C._nn.softplus`
  reaches the traced instances of the `nn.functional.smooth` OpInfo (upstream:
  `_upsample_linear_vec` for `nn.functional.upsample_bilinear` through `F.interpolate`);
- a call of a C binding (`torch._C._nn.softplus`, with torch's `from torch import _C as _C`)
  is a use of its ATen op, so a kernel change reaches the library functions calling it;
- in test code, a method called on an object of unknown type is a method of that name of
  the module's own classes (`params.gen_sizes()`; upstream: `_TestParamsMaxPoolBase.
  gen_input_params` through a dict of classes in `sample_inputs_max_pool`);
- a function no static link reaches, which the recording saw a pair run, reaches that pair
  (a blind spot only while reused pairs lack a recording).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.state import PipelineState
from tests.support.observed_runs import (
    add_compiled_template,
    linked_ops,
    listing_compiled_template,
    manifest_file,
    recorded_map,
    select_head,
)
from tests.support.python_refs import add_python_refs
from tests.support.upstream_library import DECOMP_INIT
from tests.support.upstream_repo import INTERNAL, MANIFEST, UpstreamRepo, build_upstream

DB = f"{INTERNAL}/common_methods_invocations.py"
NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
DECOMPOSITIONS = "torch/_decomp/decompositions.py"

FUNCTIONAL = """import torch


def relu(input):
    return input.clamp(min=0)


def smooth(input):
    return torch._C._nn.softplus(input)
"""


DECOMPOSITIONS_TEXT = """
import torch
from torch._decomp import register_decomposition

aten = torch.ops.aten


@register_decomposition(aten.softplus)
def softplus(self):
    return torch.log1p(torch.exp(self))


def _picked_at_run_time(self):
    return self * 2


def _picked_with_a_closure(self, flag=False):
    def inner():
        return self * 2

    return inner() if flag else self
"""

SOFTPLUS = """
- func: softplus(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: softplus_kernel
"""

SAMPLE_PARAMS = """
class _SampleParams:
    def __init__(self):
        self.sizes = [2, 3]

    def gen_sizes(self):
        yield from self.sizes


def sample_inputs_mul(op_info, device, dtype):
    params = {"mul": _SampleParams}[op_info.name]()
    for size in params.gen_sizes():
        yield SampleInput(torch.ones(size, device=device, dtype=dtype), args=(3,))
"""

FAKE_IMPLS = "torch/_subclasses/fake_impls.py"  # inside a package summarized as one node
FAKE_IMPLS_TEXT = """
import torch

aten = torch._ops.ops.aten


def register_op_impl(op):
    def register(fn):
        return fn

    return register


@register_op_impl(aten.abs.default)
def _fake_abs_kernel(fake_mode, func, x):
    return x.new_empty(x.shape)


def _fake_abs(fake_mode, func, x):
    return x.new_empty(x.shape)


def _fake_index(fake_mode, func, x, indices):
    return x.new_empty(x.shape)
"""

SMOOTH_ENTRY = """    UnaryUfuncInfo("nn.functional.smooth", sample_inputs_func=sample_inputs_unary),
]"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    repo = build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")
    repo.reset()
    repo.write("torch/__init__.py", "from torch import _C as _C\n")
    repo.write("torch/nn/__init__.py", "from torch.nn import functional\n")
    repo.write("torch/nn/functional.py", FUNCTIONAL)
    repo.write("torch/_decomp/__init__.py", DECOMP_INIT)
    repo.write(DECOMPOSITIONS, DECOMPOSITIONS_TEXT)
    repo.write(NATIVE, repo.read(NATIVE) + SOFTPLUS)
    old = repo.read(DB)
    start, end = old.index("def sample_inputs_mul("), old.index("def sample_inputs_unary(")
    repo.write(DB, old[:start] + SAMPLE_PARAMS.lstrip("\n") + "\n\n" + old[end:])
    repo.edit(DB, "\n]\n\nunary_ufuncs", "\n" + SMOOTH_ENTRY + "\n\nunary_ufuncs")
    repo.write(FAKE_IMPLS, FAKE_IMPLS_TEXT)
    add_compiled_template(repo)
    repo.base = repo.commit(
        "a C binding, its decomposition, an entry calling it, a traced template"
    )
    return repo


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = listing_compiled_template().replace(
        "      - exp\n", "      - exp\n      - nn.functional.smooth\n"
    )
    return manifest_file(tmp_path_factory.mktemp("manifests"), text)


def _templates(state: PipelineState, op: str) -> set[str]:
    return {
        c.instance.template
        for c in state.candidates.values()
        if c.instance.op == op and any(x.stage == "map" and x.kind != "canary" for x in c.causes)
    }


def test_a_decomposition_reaches_the_traced_instances_of_an_entry_whose_code_calls_its_op(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(DECOMPOSITIONS, "torch.exp(self))", "torch.exp(self) + 1)")
    state = select_head(upstream, manifest, head, tmp_path)
    assert _templates(state, "nn.functional.smooth") == {"test_compiled"}
    assert not state.blind_spots


def test_a_kernel_change_reaches_the_library_function_calling_its_c_binding(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(NATIVE, "CPU, CUDA: softplus_kernel", "CPU, CUDA: softplus_kernel_v2")
    state = select_head(upstream, manifest, head, tmp_path)
    assert {"test_out", "test_compiled"} <= _templates(state, "nn.functional.smooth")


def test_a_method_of_a_sample_input_class_reaches_the_op_whose_samples_call_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(DB, "yield from self.sizes", "yield from reversed(self.sizes)")
    state = select_head(upstream, manifest, head, tmp_path)
    assert {("mul", "float16"), ("mul", "float32")} <= linked_ops(state)
    assert ("add", "float16") not in linked_ops(state)


def _runtime_pick_edit(upstream: UpstreamRepo) -> str:
    return upstream.change(DECOMPOSITIONS, "return self * 2", "return self * 3")


def test_a_function_no_static_link_reaches_is_a_blind_spot_without_a_recording(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = select_head(upstream, manifest, _runtime_pick_edit(upstream), tmp_path)
    assert any("_picked_at_run_time" in b for b in state.blind_spots)
    assert not linked_ops(state)


def test_a_function_only_the_recording_links_reaches_the_pairs_that_ran_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """What the recording does not cover -- pairs without a recording, a template without an
    (op, dtype) such as test_plain -- keeps the blind spot and its canary."""
    head = _runtime_pick_edit(upstream)
    everything = select_head(upstream, manifest, head, tmp_path / "static")
    pairs = {(i.database, i.op, i.dtype) for i in everything.reused if i.op is not None and i.dtype}
    ran = ("opinfo", "abs", "float32")
    assert ran in pairs
    functions = {p: [f"{DECOMPOSITIONS}::_picked_at_run_time"] if p == ran else [] for p in pairs}
    deps = str(recorded_map(tmp_path, functions))
    only_ops = manifest_file(
        tmp_path, manifest.read_text().replace("            - TestCommon::test_plain\n", "")
    )
    state = select_head(upstream, only_ops, head, tmp_path / "ops", deps=deps)
    assert linked_ops(state) == {("abs", "float32")}
    assert not state.blind_spots  # every reused instance is a recorded pair
    state = select_head(upstream, manifest, head, tmp_path / "plain", deps=deps)
    assert ("abs", "float32") in linked_ops(state)
    assert any("only by the recording" in b for b in state.blind_spots)
    (tmp_path / "partial").mkdir()
    partial = recorded_map(tmp_path / "partial", {ran: functions[ran]})
    state = select_head(upstream, only_ops, head, tmp_path / "p", deps=str(partial))
    assert linked_ops(state) == {("abs", "float32")}
    assert any("only by the recording" in b for b in state.blind_spots)


def test_an_edit_in_a_closure_the_recording_never_saw_run_stays_a_blind_spot(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """The recording saw `_picked_with_a_closure` run but never its `inner`: it cannot rule
    the edit out, so the change is a blind spot with its canary, not "no effect"."""
    head = upstream.change(
        DECOMPOSITIONS,
        "def inner():\n        return self * 2",
        "def inner():\n        return self * 3",
    )
    everything = select_head(upstream, manifest, head, tmp_path / "static")
    pairs = {(i.database, i.op, i.dtype) for i in everything.reused if i.op is not None and i.dtype}
    ran = ("opinfo", "abs", "float32")
    functions = {
        p: [f"{DECOMPOSITIONS}::_picked_with_a_closure"] if p == ran else [] for p in pairs
    }
    deps = recorded_map(tmp_path, functions)
    state = select_head(upstream, manifest, head, tmp_path, deps=str(deps))
    assert any("_picked_with_a_closure" in b for b in state.blind_spots)
    assert state.candidates  # the canary


PYTHON_REF_TEMPLATE = """
    @ops(python_ref_db)
    def test_python_ref(self, device, dtype, op):
        pass

    @ops(op_db)
    def test_skipped_by_manifest("""


def test_a_python_refs_pairs_are_reached_where_its_opinfos_pairs_ran_the_change(
    tmp_path: Path,
) -> None:
    """The recording runs `_refs.mul` alone, but its templates compare it with `torch.mul`:
    a change the `mul` pairs ran reaches the `_refs.mul` pairs too (the full mutation run
    missed `_refs.unfold_copy` for an `unfold_copy` kernel change this way)."""
    repo = build_upstream(tmp_path / "pytorch")
    repo.reset()
    repo.write("torch/_decomp/__init__.py", DECOMP_INIT)
    repo.write(DECOMPOSITIONS, DECOMPOSITIONS_TEXT)
    ref_db = '\npython_ref_db = [PythonRefInfo("_refs.mul", torch_opinfo_name="mul")]\n'
    add_python_refs(repo, ref_db, PYTHON_REF_TEMPLATE)
    repo.base = repo.commit("a PythonRefInfo of mul")
    text = MANIFEST.replace(
        "            - TestCommon::test_plain\n", "            - TestCommon::test_python_ref\n"
    ).replace("      - exp\n", "      - exp\n      - _refs.mul\n")
    manifest = manifest_file(tmp_path, text)
    head = repo.change(DECOMPOSITIONS, "return self * 2", "return self * 3")
    pairs = [
        ("opinfo", op, d) for op in ("mul", "_refs.mul", "add") for d in ("float16", "float32")
    ]
    functions = {
        p: [f"{DECOMPOSITIONS}::_picked_at_run_time"] if p[1] == "mul" else [] for p in pairs
    }
    state = select_head(repo, manifest, head, tmp_path, deps=str(recorded_map(tmp_path, functions)))
    ops = {op for op, _ in linked_ops(state)}
    assert {"mul", "_refs.mul"} <= ops and "add" not in ops


def test_a_removed_function_the_recording_saw_run_reaches_the_pairs_that_ran_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Whoever ran it now runs something else or fails, whether or not a caller changed (a
    method call or a lookup by name names no definition). Without a recording, the removal
    is reasoned about statically: its users had to change too."""
    head = upstream.change(
        DECOMPOSITIONS, "def _picked_at_run_time(self):\n    return self * 2\n", ""
    )
    state = select_head(upstream, manifest, head, tmp_path / "static")
    assert state.mapped is not None
    assert any("_picked_at_run_time removed" in n for n in state.mapped.no_effect)
    pairs = {(i.database, i.op, i.dtype) for i in state.reused if i.op is not None and i.dtype}
    ran = ("opinfo", "abs", "float32")
    functions = {p: [f"{DECOMPOSITIONS}::_picked_at_run_time"] if p == ran else [] for p in pairs}
    deps = str(recorded_map(tmp_path, functions))
    state = select_head(upstream, manifest, head, tmp_path / "map", deps=deps)
    assert ("abs", "float32") in linked_ops(state)
    assert ("abs", "float16") not in linked_ops(state)


def _pairs_of(state: PipelineState) -> set[tuple[str, str, str]]:
    return {(i.database, i.op, i.dtype) for i in state.reused if i.op is not None and i.dtype}


def test_a_function_inside_a_summarized_package_reaches_the_pairs_the_recording_saw_run_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """A FakeTensor implementation is code of a package summarized as one node: without a
    recording, a canary aimed at the package's reach (which may well skip the op it
    implements); with one, the pairs that ran it."""
    head = upstream.change(
        FAKE_IMPLS,
        "return x.new_empty(x.shape)\n\n\ndef _fake_index",
        "return x.new_empty(x.shape[1:])\n\n\ndef _fake_index",
    )
    state = select_head(upstream, manifest, head, tmp_path / "static")
    assert not linked_ops(state)
    ran = ("opinfo", "abs", "float32")
    functions = {p: [f"{FAKE_IMPLS}::_fake_abs"] if p == ran else [] for p in _pairs_of(state)}
    deps = str(recorded_map(tmp_path, functions))
    state = select_head(upstream, manifest, head, tmp_path / "map", deps=deps)
    assert linked_ops(state) == {("abs", "float32")}


def test_what_the_recording_shows_running_nearly_everywhere_is_machinery(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Reached through the recording by more than half of the reused instances: a canary
    aimed at them, as a change the static links find that broad."""
    head = upstream.change(
        FAKE_IMPLS,
        "indices):\n    return x.new_empty(x.shape)",
        "indices):\n    return x.new_empty(x.shape[1:])",
    )
    state = select_head(upstream, manifest, head, tmp_path / "static")
    pairs = _pairs_of(state)
    functions = {p: [f"{FAKE_IMPLS}::_fake_index"] for p in pairs}
    deps = str(recorded_map(tmp_path, functions))
    state = select_head(upstream, manifest, head, tmp_path / "map", deps=deps)
    assert state.mapped is not None
    assert not linked_ops(state)
    assert any("_fake_index modified: reaches" in c.summary for c in state.mapped.canary_causes)


def test_a_method_removed_from_a_class_still_defined_reaches_the_users_of_the_class(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Statically: `params.gen_sizes()` names no definition, so it did not have to change
    when `gen_sizes` went (it now fails, or finds a base's method)."""
    head = upstream.change(DB, "    def gen_sizes(self):\n        yield from self.sizes\n", "")
    state = select_head(upstream, manifest, head, tmp_path)
    assert {("mul", "float16"), ("mul", "float32")} <= linked_ops(state)
    assert ("add", "float16") not in linked_ops(state)


def test_a_fake_tensor_implementation_registered_for_an_op_reaches_its_traced_instances(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`@register_op_impl(aten.abs.default)` in torch/_subclasses/fake_impls.py is read as a
    registration although its package is one node: without a recording, an edit reaches the
    instances that trace abs."""
    head = upstream.change(
        FAKE_IMPLS,
        "def _fake_abs_kernel(fake_mode, func, x):\n    return x.new_empty(x.shape)",
        "def _fake_abs_kernel(fake_mode, func, x):\n    return x.new_empty(x.shape[1:])",
    )
    state = select_head(upstream, manifest, head, tmp_path)
    assert _templates(state, "abs") == {"test_compiled"}
