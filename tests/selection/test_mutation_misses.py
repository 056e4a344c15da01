"""Misses found by the mutation benchmark (bench/bench_mutations.py, docs/benchmarks.md):
upstream edits whose affected tests a link kind should select and once did not, each small,
over an upstream-shaped repository, kept as regression tests now that they are fixed.

The controls beside them check that the scenario is what the benchmark saw: the same edit
with the other mode, or a neighbouring edit, is selected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.observed_runs import linked_ops, manifest_file, recorded_map, select_head
from tests.support.upstream_repo import INTERNAL, MANIFEST, UpstreamRepo, build_upstream

DB = f"{INTERNAL}/common_methods_invocations.py"

ERROR_INPUTS = """

def error_inputs_add(op_info, device):
    yield SampleInput(torch.ones(2, device=device), args=(torch.ones(3),))
"""

COMMON_MODULES = """
import torch
from torch.testing._internal.common_dtype import floating_types_and


class ModuleInfo:
    def __init__(self, module_cls, *, module_inputs_func, dtypes=floating_types_and(torch.float16)):
        self.module_cls = module_cls
        self.module_inputs_func = module_inputs_func
        self.dtypes = dtypes


class modules:
    def __init__(self, module_info_iterable, allowed_dtypes=None):
        self.module_info_list = list(module_info_iterable)

    def __call__(self, fn):
        return fn


def module_inputs_torch_nn_Linear(module_info, device, dtype, requires_grad, training):
    return [torch.ones(3, device=device, dtype=dtype)]


module_db = [
    ModuleInfo(torch.nn.Linear, module_inputs_func=module_inputs_torch_nn_Linear),
]
"""

LINEAR = """
from torch.nn import functional as F


class Module:
    def __call__(self, *args):
        return self.forward(*args)


class Linear(Module):
    def __init__(self, features):
        self.weight = features

    def forward(self, input):
        return F.scaled_linear(input, self.weight)
"""

SCALED_LINEAR = """

def scaled_linear(input, weight):
    return input * weight * 2
"""

TEST_MODULES = """
import torch
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_modules import module_db, modules
from torch.testing._internal.common_utils import TestCase, run_tests


class TestModule(TestCase):
    @modules(module_db)
    def test_forward(self, device, dtype, module_info):
        module = module_info.module_cls(3)
        for inputs in module_info.module_inputs_func(module_info, device, dtype, False, False):
            module(inputs)


instantiate_device_type_tests(TestModule, globals())

if __name__ == "__main__":
    run_tests()
"""

MODULES_MANIFEST = """
    - path: ${TORCH_ROOT}/test/test_modules.py
      unlisted_test_mode: skip
      tests:
        - names:
            - TestModule::test_forward
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    """The base upstream repository plus an error-input function of `add`, a module class
    whose forward calls an nn.functional function, and a ModuleInfo template testing it."""
    repo = build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")
    repo.reset()
    repo.edit(DB, "\n\nop_db = [", ERROR_INPUTS + "\n\nop_db = [")
    repo.edit(
        DB,
        "sample_inputs_func=sample_inputs_add,",
        "sample_inputs_func=sample_inputs_add,\n        error_inputs_func=error_inputs_add,",
    )
    repo.write(f"{INTERNAL}/common_modules.py", COMMON_MODULES)
    repo.write("torch/nn/__init__.py", "from torch.nn.modules.linear import Linear\n")
    repo.write("torch/nn/modules/__init__.py", "")
    repo.write("torch/nn/modules/linear.py", LINEAR)
    repo.write("torch/nn/functional.py", repo.read("torch/nn/functional.py") + SCALED_LINEAR)
    repo.write("test/test_modules.py", TEST_MODULES)
    repo.base = repo.commit("error inputs, a module and its ModuleInfo")
    return repo


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = MANIFEST.replace("  global:\n", MODULES_MANIFEST.lstrip("\n") + "  global:\n")
    text = text.replace(
        "    supported_ops:\n",
        "    supported_modules:\n      - torch.nn.Linear\n    supported_ops:\n",
    )
    return manifest_file(tmp_path_factory.mktemp("manifests"), text)


ADD_PAIRS = {
    ("opinfo", "add", dtype): [f"{DB}::sample_inputs_add"] for dtype in ("float16", "float32")
}


def _error_input_edit(upstream: UpstreamRepo) -> str:
    return upstream.change(DB, "args=(torch.ones(3),)", "args=(torch.ones(4),)")


def test_control_an_error_input_function_reaches_its_op_statically(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = select_head(upstream, manifest, _error_input_edit(upstream), tmp_path)
    assert {("add", "float16"), ("add", "float32")} <= linked_ops(state)


def test_an_error_input_function_reaches_its_op_with_a_recorded_map(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    deps = recorded_map(tmp_path, ADD_PAIRS)
    state = select_head(upstream, manifest, _error_input_edit(upstream), tmp_path, deps=str(deps))
    assert {("add", "float16"), ("add", "float32")} <= linked_ops(state)


def _module_edit(upstream: UpstreamRepo) -> str:
    return upstream.change("torch/nn/functional.py", "input * weight * 2", "input * weight * 3")


def test_control_the_module_template_is_enumerated_and_its_inputs_link(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(
        INTERNAL + "/common_modules.py", "torch.ones(3, device", "torch.ones(4, device"
    )
    state = select_head(upstream, manifest, head, tmp_path)
    assert ("nn.Linear", "float32") in linked_ops(state)


def test_a_function_a_modules_forward_calls_reaches_its_moduleinfo(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    state = select_head(upstream, manifest, _module_edit(upstream), tmp_path)
    assert ("nn.Linear", "float32") in linked_ops(state)


def test_a_recorded_map_narrows_a_static_link_to_the_pairs_that_ran_it(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """Observed links: the recording decides for the pairs it recorded. sample_inputs_add
    ran for add/float16 only, so an edit of it reaches that pair (basis observed), and
    add/float32, recorded without it, is ruled out with a reason."""
    head = upstream.change(DB, "def sample_inputs_add(", "def sample_inputs_add(*_unused, ")
    static = select_head(upstream, manifest, head, tmp_path)
    assert {("add", "float16"), ("add", "float32")} <= linked_ops(static)
    deps = recorded_map(
        tmp_path,
        {
            ("opinfo", "add", "float16"): [f"{DB}::sample_inputs_add"],
            ("opinfo", "add", "float32"): [],
        },
    )
    state = select_head(upstream, manifest, head, tmp_path, deps=str(deps))
    assert ("add", "float16") in linked_ops(state) and ("add", "float32") not in linked_ops(state)
    bases = {
        cause.basis
        for c in state.candidates.values()
        if (c.instance.op, c.instance.dtype) == ("add", "float16")
        for cause in c.causes
        if cause.stage == "map"
    }
    assert "observed" in bases
