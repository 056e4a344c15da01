"""A small upstream-shaped PyTorch repository, built with GitPython for the selection tests.

The files have the shape the selection parses (an OpInfo database, common_device_type-style
helpers, a test template file, native_functions.yaml) but are written here, tiny, not
copied from PyTorch. `UpstreamRepo.change(...)` commits an edit and returns its SHA.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import git

INTERNAL = "torch/testing/_internal"

COMMON_DTYPE = """
import torch

class _dispatch_dtypes(tuple):
    pass

def _validate_dtypes(*dtypes):
    return dtypes

_floating_types = _dispatch_dtypes((torch.float32, torch.float64))

def floating_types():
    return _floating_types

def floating_types_and(*dtypes):
    return _floating_types + _validate_dtypes(*dtypes)

_all_types = _floating_types + _dispatch_dtypes((torch.int32, torch.int64))

def all_types_and(*dtypes):
    return _all_types + _validate_dtypes(*dtypes)
"""

OPINFO_CORE = """
from torch.testing._internal.common_dtype import floating_types


class DecorateInfo:
    def __init__(self, decorators, cls_name=None, test_name=None, *, device_type=None, dtypes=None, active_if=True):
        self.decorators = decorators
        self.device_type = device_type

    def is_active(self, cls_name, test_name, device_type, dtype, param_kwargs):
        return self.device_type is None or self.device_type == device_type


class SampleInput:
    def __init__(self, input, args=()):
        self.input = input
        self.args = args


class OpInfo:
    def __init__(self, name, *, dtypes=None, sample_inputs_func=None, ref=None, skips=(), decorators=(), variant_test_name="", supports_out=True):
        self.name = name
        self.dtypes = dtypes
        self.sample_inputs_func = sample_inputs_func

    def supported_dtypes(self, device_type):
        return self.dtypes

    def sample_inputs(self, device, dtype):
        return self.sample_inputs_func(self, device, dtype)


class UnaryUfuncInfo(OpInfo):
    def __init__(self, name, *, dtypes=floating_types(), **kwargs):
        super().__init__(name, dtypes=dtypes, **kwargs)
"""

DATABASE = '''
import unittest

import torch
from torch.testing._internal.common_device_type import skipMPS
from torch.testing._internal.common_dtype import all_types_and, floating_types, floating_types_and
from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo, SampleInput, UnaryUfuncInfo


def sample_inputs_add(op_info, device, dtype):
    yield SampleInput(torch.ones(3, device=device, dtype=dtype), args=(2,))


def sample_inputs_mul(op_info, device, dtype):
    yield SampleInput(torch.ones(4, device=device, dtype=dtype), args=(3,))


def sample_inputs_unary(op_info, device, dtype):
    """Unary samples."""
    yield SampleInput(torch.ones(5, device=device, dtype=dtype))


op_db = [
    OpInfo(
        "add",
        dtypes=all_types_and(torch.float16),
        sample_inputs_func=sample_inputs_add,
        skips=(
            DecorateInfo(unittest.expectedFailure, "TestCommon", "test_out", device_type="mps"),
        ),
    ),
    OpInfo(
        "mul",
        dtypes=floating_types_and(torch.float16),
        sample_inputs_func=sample_inputs_mul,
    ),
    UnaryUfuncInfo("abs", sample_inputs_func=sample_inputs_unary),
    UnaryUfuncInfo(
        "exp",
        dtypes=floating_types_and(torch.float16),
        sample_inputs_func=sample_inputs_unary,
        skips=(DecorateInfo(skipMPS),),
    ),
]

unary_ufuncs = [op for op in op_db if isinstance(op, UnaryUfuncInfo)]
'''

DEVICE_TYPE = """
import torch


class DeviceTypeTestBase:
    device_type = "generic"

    @classmethod
    def instantiate_test(cls, name, test, *, generic_cls=None):
        if cls.device_type == "cuda":
            torch.cuda.synchronize()
        setattr(cls, name + "_" + cls.device_type, test)


class CPUTestBase(DeviceTypeTestBase):
    device_type = "cpu"


class PrivateUse1TestBase(DeviceTypeTestBase):
    device_type = "privateuse1"


def instantiate_device_type_tests(generic_test_class, scope, except_for=None, only_for=None):
    for base in (CPUTestBase, PrivateUse1TestBase):
        scope[generic_test_class.__name__ + base.device_type.upper()] = type(generic_test_class.__name__, (base, generic_test_class), {})


class ops:
    def __init__(self, op_list, *, dtypes=None, allowed_dtypes=None):
        self.op_list = list(op_list)

    def __call__(self, fn):
        return fn


class dtypes:
    def __init__(self, *args, device_type="all"):
        self.args = args

    def __call__(self, fn):
        return fn


def onlyCUDA(fn):
    return fn


def skipMPS(fn):
    return fn


def expectedFailureMPS(fn):
    return fn
"""

COMMON_UTILS = """
import unittest


class TestCase(unittest.TestCase):
    def setUp(self):
        self.precision = 1e-5

    def assertClose(self, a, b):
        return abs(a - b) <= self.precision


def make_tensor_helper(shape, device, dtype):
    import torch
    return torch.zeros(shape, device=device, dtype=dtype)


def run_tests():
    unittest.main()
"""

TEST_OPS = """
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, onlyCUDA, ops
from torch.testing._internal.common_methods_invocations import op_db, unary_ufuncs
from torch.testing._internal.common_utils import TestCase, make_tensor_helper, run_tests


class TestCommon(TestCase):
    @ops(op_db)
    def test_out(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            op.op(sample.input, *sample.args)

    @ops(unary_ufuncs)
    def test_unary(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            self.assertClose(op.op(sample.input), op.op(sample.input))

    @dtypes(torch.float16, torch.float32)
    def test_plain(self, device, dtype):
        make_tensor_helper((2, 2), device, dtype)

    @onlyCUDA
    def test_streams(self, device):
        pass

    @ops(op_db)
    def test_skipped_by_manifest(self, device, dtype, op):
        pass


instantiate_device_type_tests(TestCommon, globals())

if __name__ == "__main__":
    run_tests()
"""

NATIVE_FUNCTIONS = """
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU, CUDA: add_kernel
    MPS: add_mps

- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CompositeExplicitAutograd: mul

- func: abs(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: abs
"""

# An edit of mul's kernel (a native_functions.yaml dispatch entry): it reaches every mul test.
MUL_KERNEL_EDIT = (
    "torchgen/packaged/ATen/native/native_functions.yaml",
    "CompositeExplicitAutograd: mul",
    "CompositeExplicitAutograd: mul_v2",
)

MANIFEST = """
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_ops.py
      unlisted_test_mode: skip
      tests:
        - names:
            - TestCommon::test_out
            - TestCommon::test_plain
            - TestCommon::test_streams
        - names:
            - TestCommon::test_unary
          mode: xfail
          reason: "float16 saturates"
        - names:
            - TestCommon::test_skipped_by_manifest
          mode: skip
          reason: "not for this device"
  global:
    supported_dtypes:
      - name: float16
      - name: float32
    supported_ops:
      - add
      - mul
      - abs
      - exp
"""

FILES = {
    f"{INTERNAL}/common_dtype.py": COMMON_DTYPE,
    f"{INTERNAL}/opinfo/__init__.py": "",
    f"{INTERNAL}/opinfo/core.py": OPINFO_CORE,
    f"{INTERNAL}/common_methods_invocations.py": DATABASE,
    f"{INTERNAL}/common_device_type.py": DEVICE_TYPE,
    f"{INTERNAL}/common_utils.py": COMMON_UTILS,
    "test/test_ops.py": TEST_OPS,
    "torchgen/packaged/ATen/native/native_functions.yaml": NATIVE_FUNCTIONS,
    "torch/nn/functional.py": "def relu(input):\n    return input.clamp(min=0)\n",
    "torch/version.py": "__version__ = '9.1.0'\ngit_version = 'abc1234'\n",
}


@dataclass
class UpstreamRepo:
    path: Path
    repo: git.Repo
    base: str

    def write(self, rel: str, text: str) -> None:
        file = self.path / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text(encoding="utf-8")

    def edit(self, rel: str, old: str, new: str) -> None:
        text = self.read(rel)
        assert old in text, f"{old!r} not in {rel}"
        (self.path / rel).write_text(text.replace(old, new, 1), encoding="utf-8")

    def commit(self, message: str, branch_from: str | None = None) -> str:
        self.repo.git.add("--all")
        self.repo.index.commit(message)
        return self.repo.head.commit.hexsha

    def reset(self) -> None:
        """Back to the base commit (working tree and branch), for the next scenario."""
        self.repo.git.checkout("--force", "-B", "main", self.base)

    def change(self, rel: str, old: str, new: str, message: str = "change") -> str:
        self.reset()
        self.edit(rel, old, new)
        return self.commit(message)


def build_upstream(root: Path) -> UpstreamRepo:
    root.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "test")
        config.set_value("user", "email", "test@example.invalid")
    upstream = UpstreamRepo(root, repo, "")
    for rel, text in FILES.items():
        upstream.write(rel, text)
    upstream.base = upstream.commit("base")
    repo.create_tag("v9.1.0")
    return upstream


def write_manifest(directory: Path, also: tuple[str, ...] = ()) -> Path:
    """The fixture manifest; `also`: more `Class::method` names run like TestCommon::test_out."""
    text = textwrap.dedent(MANIFEST).lstrip("\n")
    listed = "".join(f"            - {name}\n" for name in also)
    text = text.replace("- TestCommon::test_out\n", "- TestCommon::test_out\n" + listed, 1)
    path = directory / "fixture_manifest.yaml"
    path.write_text(text, encoding="utf-8")
    return path
