"""Small upstream-shaped torch sources (as the release mirror holds them) for the mutation
benchmark's tests: every kind of file a mutation goes into, a few functions each."""

from __future__ import annotations

DECOMPOSITIONS = '''\
import functools
import itertools

import torch
from torch._decomp import register_decomposition

aten = torch._ops.ops.aten


def _halve(x):
    """Half of x."""
    return x * 0.5


@register_decomposition(aten.hardtanh_backward)
def hardtanh_backward(grad_output, self, min_val: float, max_val: float):
    return torch.where((self <= min_val) | (self >= max_val), 0.0, grad_output)


@register_decomposition(aten.gelu)
def gelu(a, approximate: str = "none"):
    if a.is_cuda:
        return a * 2
    if a.device.type == "cuda":
        a = a + 1
    return _halve(a) * (1 + torch.erf(a / 1.4142135623730951))
'''

META = """\
import torch
from torch._meta_registrations import register_meta

aten = torch.ops.aten


@register_meta([aten.take.default, aten.take.out])
def meta_take(self, index):
    torch._check(index.dtype == torch.long, lambda: "index must be long")
    return self.new_empty(index.shape)
"""

REFS = """\
import torch

__all__ = ["abs", "relu6"]


def _make_elementwise_unary_reference(type_promotion_kind, *, aten_op=1):
    def inner(prim):
        return prim
    return inner


@_make_elementwise_unary_reference(0)
def abs(a):
    return torch.where(a < 0, -a, a)
"""

FUNCTIONAL = '''\
import torch
from torch import Tensor


def _canonical_mask(mask, mask_name: str, other_type, target_type):
    if mask is not None:
        _mask_dtype = mask.dtype
        if _mask_dtype != torch.bool and not torch.is_floating_point(mask):
            raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    return mask


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """hardtanh(input) -> Tensor"""
    if has_torch_function_unary(input):
        return handle_torch_function(hardtanh, (input,), input, min_val=min_val)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    result = torch._C._nn.hardtanh(input, min_val, max_val)
    return result
'''

TORCH_FUNCTIONAL = """\
import torch

__all__ = ["broadcast_shapes", "split"]


def broadcast_shapes(*shapes):
    max_len = 0
    for shape in shapes:
        if isinstance(shape, int):
            max_len = max(max_len, 1)
    return torch.Size([1] * max_len)
"""

TENSOR = """\
import torch


class Tensor(torch._C.TensorBase):
    def __rsub__(self, other):
        return _C._VariableFunctions.rsub(self, other)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        return torch.norm(self, p, dim, keepdim, dtype=dtype)
"""

DATABASE = """\
import torch
from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo, PythonRefInfo, UnaryUfuncInfo


def sample_inputs_abs(op_info, device, dtype, requires_grad, **kwargs):
    for shape in ((2, 3), (4,)):
        yield SampleInput(make_tensor(shape, device=device, dtype=dtype))


def error_inputs_abs(op_info, device, **kwargs):
    yield ErrorInput(SampleInput(make_tensor((1,), device=device, dtype=torch.bool)), error_regex="bool")


def reference_abs(x):
    out = np.abs(x)
    return out.astype(x.dtype) if x.ndim > 0 else out


op_db = [
    UnaryUfuncInfo('abs',
                   ref=reference_abs,
                   sample_inputs_func=sample_inputs_abs,
                   error_inputs_func=error_inputs_abs,
                   supports_out=True,
                   supports_forward_ad=True,
                   skips=(
                       DecorateInfo(unittest.skip("Skipped!"), 'TestCommon', 'test_out', dtypes=(torch.float16,)),
                       DecorateInfo(unittest.skip("Skipped!"), 'TestCommon', 'test_out', device_type='cuda'),
                       DecorateInfo(unittest.expectedFailure, 'TestUnaryUfuncs', 'test_reference_numerics_small', device_type='cpu'),
                       DecorateInfo(toleranceOverride({torch.float16: tol(atol=1e-3, rtol=1e-3)}), 'TestUnaryUfuncs', 'test_reference_numerics_normal'),
                   )),
]

python_ref_db = [
    PythonRefInfo("_refs.abs", torch_opinfo_name="abs"),
    PythonRefInfo("_refs.abs_out", torch_opinfo_name="abs", supports_out=False),
]
"""

NATIVE = """\
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU, CUDA: add_out
    MPS: add_out_mps

- func: hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
  dispatch:
    CUDA: hardtanh_cuda
"""

DERIVATIVES = """\
- name: abs(Tensor self) -> Tensor
  self: grad * self.sgn()
  result: handle_r_to_c(result.scalar_type(), self_t.conj() * self_p.sgn())

- name: hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
  self: hardtanh_backward(grad, self, min_val, max_val)
"""

VERSION = """\
__version__ = '2.13.0+cpu'
debug = False
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
"""

DECOMP_INIT = """\
import torch


def core_decompositions():
    aten = torch.ops.aten
    return get_decompositions([aten.lerp, aten.addcdiv, aten.linspace])
"""

SOURCES = {
    "torch/_decomp/__init__.py": DECOMP_INIT,
    "torch/_decomp/decompositions.py": DECOMPOSITIONS,
    "torch/_meta_registrations.py": META,
    "torch/_refs/__init__.py": REFS,
    "torch/nn/functional.py": FUNCTIONAL,
    "torch/_tensor.py": TENSOR,
    "torch/functional.py": TORCH_FUNCTIONAL,
    "torch/testing/_internal/common_methods_invocations.py": DATABASE,
    "torchgen/packaged/ATen/native/native_functions.yaml": NATIVE,
    "torchgen/packaged/autograd/derivatives.yaml": DERIVATIVES,
    "torch/version.py": VERSION,
}
