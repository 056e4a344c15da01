"""A small upstream-shaped ATen tree (C++ and YAML) in a real git repository, for the C++ link
tests. The files have upstream's shape (structured kernels, dispatch stubs registered from
native/cpu, a CompositeImplicitAutograd kernel with a static helper, FunctionsManual helpers
named in derivatives.yaml, a CUDA directory) but are written here, tiny, not copied from PyTorch.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import git

NATIVE = "aten/src/ATen/native"
NATIVE_FUNCTIONS = f"{NATIVE}/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
BINARY_OPS = f"{NATIVE}/BinaryOps.cpp"
BINARY_OPS_H = f"{NATIVE}/BinaryOps.h"
BINARY_KERNEL = f"{NATIVE}/cpu/BinaryOpsKernel.cpp"
ACTIVATION = f"{NATIVE}/Activation.cpp"
COMPOSITE = f"{NATIVE}/Frobnicate.cpp"
CUDA_FILE = f"{NATIVE}/cuda/Activation.cpp"
FAST_ROUTE = f"{NATIVE}/FastRoute.h"
CUDA_FUSED = f"{NATIVE}/cuda/FusedOps.cu"
MANUAL = "torch/csrc/autograd/FunctionsManual.cpp"
ITERATOR = "aten/src/ATen/TensorIterator.cpp"

FILES = {
    NATIVE_FUNCTIONS: """
        - func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          structured_delegate: add.out

        - func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
          structured_delegate: add.out

        - func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
          structured: True
          structured_inherits: TensorIteratorBase
          dispatch:
            CPU, CUDA: add_out
            SparseCPU: add_out_sparse_cpu

        - func: mul.Tensor(Tensor self, Tensor other) -> Tensor
          structured_delegate: mul.out

        - func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
          structured: True
          dispatch:
            CPU, CUDA: mul_out

        - func: gelu(Tensor self, *, str approximate='none') -> Tensor
          structured_delegate: gelu.out

        - func: gelu.out(Tensor self, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)
          structured: True
          dispatch:
            CPU: gelu_out_cpu
            CUDA: gelu_out_cuda

        - func: gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor
          dispatch:
            CPU: gelu_backward_cpu
            CUDA: gelu_backward_cuda

        - func: frobnicate(Tensor self) -> Tensor

        - func: sparse_only(Tensor self) -> Tensor
          dispatch:
            SparseCPU: sparse_only_cpu
        """,
    DERIVATIVES: """
        - name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: handle_r_to_c(self.scalar_type(), grad)
          other: handle_r_to_c(other.scalar_type(), grad * alpha)

        - name: mul.Tensor(Tensor self, Tensor other) -> Tensor
          self: mul_tensor_backward(grad, other, self.scalar_type())
          other: mul_tensor_backward(grad, self, other.scalar_type())

        - name: gelu(Tensor self, *, str approximate='none') -> Tensor
          self: gelu_backward(grad, self, approximate)
        """,
    BINARY_OPS_H: """
        #pragma once
        #include <ATen/native/DispatchStub.h>

        namespace at::native {
        using binary_fn_alpha = void (*)(TensorIteratorBase&, const Scalar& alpha);
        using binary_fn = void (*)(TensorIteratorBase&);
        DECLARE_DISPATCH(binary_fn_alpha, add_stub);
        DECLARE_DISPATCH(binary_fn, mul_stub);
        } // namespace at::native
        """,
    BINARY_OPS: """
        #include <ATen/native/BinaryOps.h>

        namespace at {
        namespace meta {

        TORCH_META_FUNC2(add, Tensor) (
          const Tensor& self, const Tensor& other, const Scalar& alpha
        ) {
          build_borrowing_binary_op(maybe_get_output(), self, other);
        }

        TORCH_META_FUNC2(mul, Tensor) (const Tensor& self, const Tensor& other) {
          build_borrowing_binary_op(maybe_get_output(), self, other);
        }

        } // namespace meta

        namespace native {

        DEFINE_DISPATCH(add_stub);
        DEFINE_DISPATCH(mul_stub);

        TORCH_IMPL_FUNC(add_out) (
          const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& result
        ) {
          add_stub(device_type(), *this, alpha);
        }

        TORCH_IMPL_FUNC(mul_out) (const Tensor& self, const Tensor& other, const Tensor& result) {
          mul_stub(device_type(), *this);
        }

        } // namespace native
        } // namespace at
        """,
    BINARY_KERNEL: """
        #define TORCH_ASSERT_NO_OPERATORS
        #include <ATen/native/BinaryOps.h>
        #include <ATen/native/cpu/Loops.h>

        namespace at::native {
        namespace {

        template <typename scalar_t>
        static inline scalar_t scaled(scalar_t a, scalar_t b, scalar_t alpha) {
          return a + alpha * b;
        }

        void add_kernel(TensorIteratorBase& iter, const Scalar& alpha_scalar) {
          AT_DISPATCH_ALL_TYPES(iter.dtype(), "add_cpu", [&]() {
            auto alpha = alpha_scalar.to<scalar_t>();
            cpu_kernel(iter, [=](scalar_t a, scalar_t b) -> scalar_t {
              return scaled(a, b, alpha);
            });
          });
        }

        void mul_kernel(TensorIteratorBase& iter) {
          AT_DISPATCH_ALL_TYPES(iter.dtype(), "mul_cpu", [&]() {
            cpu_kernel(iter, [=](scalar_t a, scalar_t b) -> scalar_t { return a * b; });
          });
        }

        } // namespace

        REGISTER_DISPATCH(add_stub, &add_kernel)
        ALSO_REGISTER_AVX512_DISPATCH(mul_stub, &mul_kernel)

        } // namespace at::native
        """,
    ACTIVATION: """
        #include <ATen/native/Activation.h>

        namespace at::native {

        DEFINE_DISPATCH(GeluKernel);
        DEFINE_DISPATCH(GeluBackwardKernel);

        TORCH_IMPL_FUNC(gelu_out_cpu) (
          const Tensor& self, std::string_view approximate, const Tensor& result
        ) {
          GeluKernel(kCPU, *this, get_gelutype_enum(approximate));
        }

        Tensor gelu_backward_cpu(const Tensor& grad, const Tensor& self, std::string_view approximate) {
          auto grad_input = at::empty_like(self);
          GeluBackwardKernel(kCPU, grad_input, grad, self);
          return grad_input;
        }

        } // namespace at::native
        """,
    COMPOSITE: """
        #include <ATen/core/Tensor.h>

        namespace at::native {

        static Tensor frobnicate_impl(const Tensor& self, int64_t times) {
          auto out = self.clone();
          for (int64_t i = 0; i < times; i++) {
            out.mul_(2);
          }
          return out;
        }

        Tensor frobnicate(const Tensor& self) {
          return frobnicate_impl(self, 3);
        }

        Tensor sparse_only_cpu(const Tensor& self) {
          return self.coalesce();
        }

        static Tensor wiggle_cpu(const Tensor& self) {
          return self.flip(0);
        }

        TORCH_LIBRARY_IMPL(aten, CPU, m) {
          m.impl("wiggle", TORCH_FN(wiggle_cpu));
        }

        TORCH_LIBRARY_IMPL(aten, SparseCPU, m) {
          m.impl("wiggle", TORCH_FN(wiggle_cpu));
        }

        } // namespace at::native
        """,
    CUDA_FILE: """
        #include <ATen/native/Activation.h>

        namespace at::native {

        TORCH_IMPL_FUNC(gelu_out_cuda) (
          const Tensor& self, std::string_view approximate, const Tensor& result
        ) {
          GeluCUDAKernelImpl(*this, get_gelutype_enum(approximate));
        }

        } // namespace at::native
        """,
    FAST_ROUTE: """
        #pragma once
        namespace at::native {
        inline bool can_use_fast_route(const Tensor& a, const Tensor& b) {
          return a.is_contiguous() && b.is_contiguous();
        }
        } // namespace at::native
        """,
    CUDA_FUSED: """
        #include <ATen/native/FastRoute.h>
        namespace at::native {
        Tensor fused_add_cuda(const Tensor& a, const Tensor& b) {
          if (can_use_fast_route(a, b)) {
            return launch_fused(a, b);
          }
          return a + b;
        }
        } // namespace at::native
        """,
    MANUAL: """
        #include <torch/csrc/autograd/FunctionsManual.h>

        namespace torch::autograd::generated::details {

        using at::Tensor;

        Tensor handle_r_to_c(ScalarType self_st, Tensor gradient_result) {
          if (!at::isComplexType(self_st) && gradient_result.is_complex()) {
            return at::real(gradient_result);
          }
          return gradient_result;
        }

        Tensor mul_tensor_backward(const Tensor& grad, const Tensor& other, ScalarType self_st) {
          auto out = grad * other.conj();
          return handle_r_to_c(self_st, std::move(out));
        }

        } // namespace torch::autograd::generated::details
        """,
    ITERATOR: """
        #include <ATen/TensorIterator.h>

        namespace at {

        void TensorIteratorBase::build(TensorIteratorConfig& config) {
          populate_operands(config);
          compute_shape(config);
        }

        } // namespace at
        """,
}


class CppUpstream:
    """The repository; `change(path, old, new)` commits an edit on top of the base."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.path = root
        self.repo = git.Repo.init(root, initial_branch="main")
        with self.repo.config_writer() as config:
            config.set_value("user", "name", "test")
            config.set_value("user", "email", "test@example.invalid")
        for rel, text in FILES.items():
            self.write(rel, text)
        self.base = self._commit("base")

    def write(self, rel: str, text: str) -> None:
        file = self.path / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")

    def _commit(self, message: str) -> str:
        self.repo.git.add("--all")
        self.repo.index.commit(message)
        return self.repo.head.commit.hexsha

    def change(self, rel: str, old: str, new: str, on: str | None = None) -> str:
        """Commit the edit on `on` (default: the base commit); return the new commit."""
        self.repo.git.checkout("--force", "-B", "main", on or self.base)
        file = self.path / rel
        text = file.read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {rel}"
        file.write_text(text.replace(old, new, 1), encoding="utf-8")
        return self._commit(f"change {rel}")
