"""Library code for the upstream-shaped repository: the places ops are implemented in Python.

Written here, tiny, in upstream's shapes (never copied): a decomposition registered with
`register_decomposition(aten.mul.Tensor)`, a meta kernel registered for two overloads, a
Python reference whose ATen op is inferred from its name by a registering decorator
factory, a template that traces what it tests (FakeTensorMode: only there do Python
decompositions and meta kernels run), `nn.functional` functions calling one another (relu6 is hardtanh under another
name), a CUDA-only branch, a CUDA-only test decorator, a testing helper that only a module
no reused test imports uses, and the OpInfo entries and native_functions.yaml entries that
tie them to tests. `add_library(upstream)` commits them on top of the base and makes that
the new base.
"""

from __future__ import annotations

from tests.support.upstream_repo import INTERNAL, UpstreamRepo

DECOMP_INIT = """
def register_decomposition(aten_op):
    def register(fn):
        return fn
    return register
"""

DECOMPOSITIONS = """
import torch
from torch._decomp import register_decomposition

aten = torch._ops.ops.aten


def _halve(x):
    return x * 0.5


@register_decomposition(aten.mul.Tensor)
def mul(a, b):
    return _halve(a) * b * 2


@register_decomposition([aten.exp.default, aten.exp.out])
def exp_decomposition(a):
    return a.exp()
"""

META = """
import torch

aten = torch.ops.aten


def register_meta(op):
    def register(fn):
        return fn
    return register


@register_meta([aten.add.Tensor, aten.add.out])
def meta_add(a, b, alpha=1):
    return a.new_empty(a.shape)
"""

REFS = """
import torch
from torch._decomp import register_decomposition

infer_aten_op = object()


def _make_elementwise_unary_reference(kind, *, aten_op=infer_aten_op):
    def inner(prim):
        if aten_op is not None:
            register_decomposition(aten_op)(prim)
        return prim
    return inner


@_make_elementwise_unary_reference("default")
def abs(a):
    return torch.where(a < 0, -a, a)
"""

FUNCTIONAL = """
import torch


def hardtanh(input, min_val=-1.0, max_val=1.0):
    return torch.clamp(input, min_val, max_val)


def relu6(input):
    return hardtanh(input, 0.0, 6.0)


def _fused_cuda_silu(input):
    return input


def silu(input: torch.Tensor) -> torch.Tensor:
    \"\"\"Sigmoid-weighted linear unit.\"\"\"
    if input.device.type == "cuda":
        return _fused_cuda_silu(input)
    return input * torch.sigmoid(input)


def relu(input):
    return input.clamp(min=0)
"""

TORCH_INIT = """
from torch import nn
"""

COMMON_CUDA = """
import torch


def with_fast_math(tolerance):
    def disabled(test, function_call):
        return function_call()

    def wrapper(f):
        def wrapped(self, *args, **kwargs):
            cond = torch.cuda.is_available() and self.device_type == "cuda"
            if cond:
                disabled(self, lambda: f(self, *args, **kwargs))
            return f(self, *args, **kwargs)
        return wrapped
    return wrapper
"""

HYPOTHESIS_UTILS = """
from torch.testing._internal.common_utils import shrink_tolerance


def assume_close(a, b):
    return shrink_tolerance(abs(a - b))
"""

UTILS_ADDITION = """

def shrink_tolerance(value):
    return value * 0.5
"""

ENTRIES = """
    UnaryUfuncInfo(
        "nn.functional.relu6",
        dtypes=floating_types_and(torch.float16),
        sample_inputs_func=sample_inputs_unary,
    ),
    UnaryUfuncInfo(
        "nn.functional.silu",
        dtypes=floating_types_and(torch.float16),
        sample_inputs_func=sample_inputs_unary,
    ),
"""

NATIVE = """
- func: exp(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: exp

- func: hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
  dispatch:
    CPU: hardtanh

- func: relu6(Tensor self) -> Tensor
  dispatch:
    CompositeImplicitAutograd: relu6

- func: silu(Tensor self) -> Tensor
  dispatch:
    CPU: silu_out

- func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
  dispatch:
    CPU: clamp
"""

TEMPLATE_DECORATED = """
    @ops(op_db)
    def test_fake(self, device, dtype, op):
        with FakeTensorMode():
            for sample in op.sample_inputs(device, dtype):
                op.op(sample.input, *sample.args)

    @with_fast_math(1e-3)
    @dtypes(torch.float16, torch.float32)
    def test_fast_math(self, device, dtype):
        make_tensor_helper((2, 2), device, dtype)

"""

SUPPORTED = """      - nn.functional.relu6
      - nn.functional.silu
"""


def add_library(upstream: UpstreamRepo, manifest_text: str) -> tuple[str, str]:
    """Commit the library files on the base and return (new base sha, manifest text that
    also runs the new ops and the decorated template)."""
    upstream.reset()
    upstream.write("torch/__init__.py", TORCH_INIT)
    upstream.write("torch/_decomp/__init__.py", DECOMP_INIT)
    upstream.write("torch/_decomp/decompositions.py", DECOMPOSITIONS)
    upstream.write("torch/_meta_registrations.py", META)
    upstream.write("torch/_refs/__init__.py", REFS)
    upstream.write("torch/nn/__init__.py", "from torch.nn import functional\n")
    upstream.write("torch/nn/functional.py", FUNCTIONAL)
    upstream.write(f"{INTERNAL}/common_cuda.py", COMMON_CUDA)
    upstream.write(f"{INTERNAL}/hypothesis_utils.py", HYPOTHESIS_UTILS)
    utils = upstream.read(f"{INTERNAL}/common_utils.py")
    upstream.write(f"{INTERNAL}/common_utils.py", utils + UTILS_ADDITION)
    upstream.edit(
        f"{INTERNAL}/common_methods_invocations.py",
        "]\n\nunary_ufuncs",
        ENTRIES.rstrip("\n").removeprefix("\n") + "\n]\n\nunary_ufuncs",
    )
    native = "torchgen/packaged/ATen/native/native_functions.yaml"
    upstream.write(native, upstream.read(native) + NATIVE)
    upstream.edit("test/test_ops.py", "    @onlyCUDA\n", TEMPLATE_DECORATED + "    @onlyCUDA\n")
    upstream.edit(
        "test/test_ops.py",
        "from torch.testing._internal.common_utils",
        "from torch.testing._internal.common_cuda import with_fast_math\n"
        "from torch.testing._internal.common_utils",
    )
    base = upstream.commit("library code")
    upstream.base = base
    manifest = manifest_text.replace("      - exp\n", "      - exp\n" + SUPPORTED).replace(
        "            - TestCommon::test_plain\n",
        "            - TestCommon::test_plain\n            - TestCommon::test_fast_math\n"
        "            - TestCommon::test_fake\n",
    )
    return base, manifest
