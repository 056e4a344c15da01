"""The pure pieces of selection.cpp: tokens, the definition reader, the diff, the YAML indexes
and the path classes, on small upstream-shaped snippets written here."""

from __future__ import annotations

import textwrap

import pytest

from selection.cpp.detect import LAYOUT_ONLY, WHOLE_FILE, detect_cpp
from selection.cpp.diff import diff_files
from selection.cpp.items import CppItem
from selection.cpp.native_index import build_formula_index, build_native_index, is_out_overload
from selection.cpp.paths import classify_cpp
from selection.cpp.reader import read_cpp
from selection.cpp.scan import definitions_by_scan
from selection.cpp.tokens import CppSyntaxError, tokenize
from selection.model import ChangeKind


def read(text: str, path: str = "aten/src/ATen/native/X.cpp") -> dict[str, CppItem]:
    parsed = read_cpp(textwrap.dedent(text), path)
    assert parsed.error == "", parsed.error
    return {item.qualname: item for item in parsed.items.values()}


def test_tokens_drop_comments_and_keep_literals_whole() -> None:
    tokens = tokenize(
        "auto s = R\"x({ not a brace })x\"; // {\nchar c = '{'; /* } */ int n = 1'000;\n"
        "#define TWICE(x) \\\n  ((x) * 2) // done\nv >>= 1; a<b<c>> d;"
    )
    assert tokens.texts == [
        "auto", "s", "=", 'R"x({ not a brace })x"', ";", "char", "c", "=", "'{'", ";",
        "int", "n", "=", "1'000", ";", "#define TWICE(x) ((x) * 2)", "v", ">>=", "1", ";",
        "a", "<", "b", "<", "c", ">", ">", "d", ";",
    ]  # fmt: skip
    assert tokens.line(15) == 3  # the directive starts on line 3


def test_unterminated_comment_is_an_error_naming_the_line() -> None:
    with pytest.raises(CppSyntaxError, match="line 2: unterminated comment"):
        tokenize("int a;\n/* never closed\nint b;")


def test_structured_kernels_meta_functions_and_stubs() -> None:
    items = read("""
        namespace at {
        namespace meta {
        TORCH_META_FUNC2(add, Tensor) (const Tensor& self, const Tensor& other, const Scalar& alpha) {
          build_borrowing_binary_op(maybe_get_output(), self, other);
        }
        }
        namespace native {
        DEFINE_DISPATCH(add_stub);
        TORCH_IMPL_FUNC(add_out) (const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& result) {
          add_stub(device_type(), *this, alpha);
        }
        }
        }
    """)
    meta = items["at::meta::TORCH_META_FUNC2(add, Tensor)"]
    impl = items["at::native::TORCH_IMPL_FUNC(add_out)"]
    stub = items["DEFINE_DISPATCH(add_stub)"]
    assert (meta.kind, meta.defines) == ("meta", ("add.Tensor",))
    assert (impl.kind, impl.defines, impl.stubs) == ("impl", ("add_out",), frozenset({"add_stub"}))
    assert "add_stub" in impl.calls and "device_type" in impl.calls
    assert (stub.kind, stub.name) == ("stub", "add_stub")


def test_registrations_without_semicolons_and_for_other_devices() -> None:
    items = read("""
        namespace at::native {
        REGISTER_DISPATCH(add_stub, &add_kernel)
        ALSO_REGISTER_AVX512_DISPATCH(mul_stub, &at::native::mul_kernel<float>)
        REGISTER_CUDA_DISPATCH(div_stub, &div_kernel_cuda)
        REGISTER_NO_CPU_DISPATCH(cudnn_stub)
        }
    """)
    got = {q: (i.registers, i.dispatch_key, i.other_device) for q, i in items.items()}
    assert got == {
        "REGISTER_DISPATCH(add_stub)": ((("add_stub", "add_kernel"),), "CPU", False),
        "ALSO_REGISTER_AVX512_DISPATCH(mul_stub)": ((("mul_stub", "mul_kernel"),), "CPU", False),
        "REGISTER_CUDA_DISPATCH(div_stub)": ((("div_stub", "div_kernel_cuda"),), "CUDA", True),
        "REGISTER_NO_CPU_DISPATCH(cudnn_stub)": ((), "none", True),
    }


def test_static_helpers_templates_and_lambdas_inside_kernels() -> None:
    items = read("""
        namespace at::native {
        namespace {
        template <typename scalar_t, typename opmath_t = at::opmath_type<scalar_t>>
        inline opmath_t twice(scalar_t a) { return a * 2; }
        }  // namespace

        static void helper(int x) { if (x) { return; } }

        void kernel(TensorIteratorBase& iter) {
          AT_DISPATCH_FLOATING_TYPES(iter.dtype(), "k", [&]() {
            cpu_kernel(iter, [](scalar_t a) -> scalar_t { return twice<scalar_t>(a); });
          });
          helper(1);
        }
        }
    """)
    assert set(items) == {"at::native::twice", "at::native::helper", "at::native::kernel"}
    assert items["at::native::twice"].file_local and items["at::native::helper"].file_local
    kernel = items["at::native::kernel"]
    assert not kernel.file_local
    assert {"twice", "cpu_kernel", "helper", "AT_DISPATCH_FLOATING_TYPES"} <= kernel.calls


def test_file_macros_are_expanded_into_the_functions_they_generate() -> None:
    items = read("""
        namespace at::native {
        #define CREATE_BINARY_IMPL(func_out, func_stub) \\
        TORCH_IMPL_FUNC(func_out) (const Tensor& self, const Tensor& other, const Tensor& result) { \\
          func_stub(device_type(), *this); \\
        }
        CREATE_BINARY_IMPL(maximum_out, maximum_stub)
        CREATE_BINARY_IMPL(minimum_out, minimum_stub)
        }
    """)
    impl = items["at::native::TORCH_IMPL_FUNC(maximum_out)"]
    assert (impl.defines, impl.stubs) == (("maximum_out",), frozenset({"maximum_stub"}))
    assert impl.via == "CREATE_BINARY_IMPL(maximum_out, maximum_stub)"
    assert items["CREATE_BINARY_IMPL"].kind == "macro"


def test_classes_constructors_operators_overloads_and_library_blocks() -> None:
    items = read("""
        namespace at::native {
        struct TORCH_API Accumulator final : public Base<float> {
          float total{0};
          float operator()(float a) const { return total + a; }
        };
        Accumulator::Accumulator(int n) : total{0}, count_(n) { reset(); }
        bool operator==(const Accumulator& a, const Accumulator& b) { return a.total == b.total; }
        Tensor pick(const Tensor& self, int64_t dim) { return self; }
        Tensor pick(const Tensor& self, Dimname dim) { return self; }
        TORCH_LIBRARY_IMPL(aten, CPU, m) {
          m.impl("frob.out", TORCH_FN(frob_out_cpu));
        }
        }
    """)
    assert items["at::native::Accumulator"].kind == "class"
    ctor = items["at::native::Accumulator::Accumulator"]
    assert ctor.method and "reset" in ctor.calls
    assert items["at::native::operator=="].name == "operator=="
    picks = read_cpp(
        "Tensor pick(const Tensor& self, int64_t dim) { return self; }\n"
        "Tensor pick(const Tensor& self, Dimname dim) { return self; }\n",
        "aten/src/ATen/native/X.cpp",
    )
    assert sorted(picks.items) == ["pick(const Tensor&,Dimname)", "pick(const Tensor&,int64_t)"]
    library = items["at::native::TORCH_LIBRARY_IMPL(aten, CPU)"]
    assert (library.kind, library.dispatch_key) == ("library", "CPU")
    assert [(op, "frob_out_cpu" in names) for op, names in library.impls] == [("frob.out", True)]


def test_braces_that_balance_only_per_branch_are_read_through_the_first_branch() -> None:
    items = read("""
        #if defined(USE_FAST)
        void scale(float* x) {
        #else
        void scale(double* x) {
        #endif
          x[0] *= 2;
        }
    """)
    assert list(items) == ["scale"]


def test_unbalanced_file_is_unreadable_with_the_line() -> None:
    parsed = read_cpp("namespace at {\nvoid f() {\n  g();\n}\n", "aten/src/ATen/native/X.cpp")
    assert (parsed.items, parsed.error) == ({}, "line 1: '{' never closed")


def test_diff_ignores_comments_and_layout_and_tells_overloads_apart() -> None:
    old = read_cpp("int f(int a) { return a + 1; }\nint f(float a) { return a; }\n", "x.cpp")
    same = read_cpp(
        "// doc\nint f(int b)\n{\n  return b + 1; /* why */\n}\nint f(float a) { return a; }\n",
        "x.cpp",
    )
    new = read_cpp("int f(int a) { return a + 2; }\nint g() { return 0; }\n", "x.cpp")
    assert [c.item.key for c in diff_files(old, same)] == ["f(int)"]  # the parameter's name
    changes = {(c.item.key, c.kind) for c in diff_files(old, new)}
    assert changes == {
        ("f(int)", ChangeKind.modified),
        ("f(float)", ChangeKind.removed),
        ("g()", ChangeKind.added),
    }


def test_parameter_rename_alone_is_a_modification_not_a_new_function() -> None:
    old = read_cpp("int f(int a) { return 0; }", "x.cpp")
    new = read_cpp("int f(int b) { return 0; }", "x.cpp")
    assert [(c.item.key, c.kind) for c in diff_files(old, new)] == [("f(int)", ChangeKind.modified)]


def test_detect_cpp_reports_definitions_no_effect_and_unreadable_files() -> None:
    path = "aten/src/ATen/native/cpu/K.cpp"
    base = "namespace at::native {\nvoid k() { a(); }\n}\n"
    detected = detect_cpp(base, base.replace("a();", "b();"), path, ChangeKind.modified)
    assert [(c.function, c.name, c.kind) for c in detected.changes] == [
        ("at::native::k", "k", ChangeKind.modified)
    ]
    layout = detect_cpp(base, "// x\n" + base, path, ChangeKind.modified)
    assert [(c.function, c.no_effect) for c in layout.changes] == [(WHOLE_FILE, LAYOUT_ONLY)]
    broken = detect_cpp(base, base + "void z() {\n", path, ChangeKind.modified)
    assert broken.file.parse_error.startswith("head: line 4:")
    assert [(c.function, c.parse_error) for c in broken.changes] == [
        (WHOLE_FILE, broken.file.parse_error)
    ]
    cuda = detect_cpp(base, base, "aten/src/ATen/native/cuda/K.cu", ChangeKind.modified)
    assert cuda.no_effect == "CUDA source (.cu): another device's code"
    added = detect_cpp(None, base, path, ChangeKind.added)
    assert [(c.function, c.kind) for c in added.changes] == [("at::native::k", ChangeKind.added)]


@pytest.mark.parametrize(
    ("path", "area", "reason"),
    [
        ("aten/src/ATen/native/cpu/BinaryOpsKernel.cpp", "native", ""),
        ("aten/src/ATen/native/sparse/SparseTensor.cpp", "native", ""),
        ("aten/src/ATen/native/mps/operations/Gelu.mm", "native", "MPS source (.mm)"),
        ("aten/src/ATen/native/miopen/Conv_miopen.cpp", "native", "under miopen/"),
        ("aten/src/ATen/native/mkldnn/xpu/Conv.cpp", "native", "under xpu/"),
        ("aten/src/ATen/native/vulkan/ops/Mm.cpp", "native", "under vulkan/"),
        ("aten/src/ATen/TensorIterator.cpp", "core", ""),
        ("c10/cuda/CUDACachingAllocator.cpp", "core", "under cuda/"),
        ("aten/src/ATen/test/basic.cpp", "core", "C++ tests/benchmarks"),
        ("torch/csrc/autograd/FunctionsManual.cpp", "autograd", ""),
    ],
)
def test_paths_are_classified_by_area_and_device(path: str, area: str, reason: str) -> None:
    where = classify_cpp(path)
    assert where is not None and where.area == area
    assert where.no_effect.startswith(reason) and bool(where.no_effect) == bool(reason)


def test_paths_outside_cpp_are_not_ours() -> None:
    assert classify_cpp("torch/nn/functional.py") is None
    assert classify_cpp("aten/src/ATen/native/native_functions.yaml") is None
    assert classify_cpp("torch/csrc/jit/ir.cpp") is None


NATIVE = """
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  structured_delegate: add.out
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
  structured: True
  ufunc_inner_loop:
    Generic: add (AllAndComplex, BFloat16)
  dispatch:
    SparseCPU, SparseMeta: add_out_sparse_cpu
- func: linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
- func: linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)
- func: empty.memory_format(SymInt[] size) -> Tensor
  dispatch:
    CPU: empty_cpu
    Meta: empty_meta_symint
    CUDA: empty_cuda
"""


def test_native_index_names_kernels_by_key() -> None:
    index = build_native_index(NATIVE, "native_functions.yaml")
    ops = {k: sorted((u.op, u.key) for u in uses) for k, uses in index.kernels.items()}
    assert ops["add"] == [("add.Tensor", "CPU (ufunc)"), ("add.out", "CPU (ufunc)")]
    assert ops["linear"] == [("linear", "CompositeImplicitAutograd")]
    assert ops["linear_out"] == [("linear.out", "CompositeImplicitAutograd")]
    assert ops["empty_cpu"] == [("empty.memory_format", "CPU")]
    assert ops["empty_meta_symint"] == [("empty.memory_format", "Meta")]
    assert "empty_cuda" not in index.kernels and "add_out_sparse_cpu" not in index.kernels
    assert {u.key for u in index.other_kernels["add_out_sparse_cpu"]} == {"SparseCPU", "SparseMeta"}
    assert sorted(u.op for u in index.metas["add.Tensor"]) == ["add.Tensor", "add.out"]
    assert {"add", "add_out", "linear", "empty"} <= index.op_api


def test_out_overloads_are_told_from_in_place_ones() -> None:
    assert is_out_overload("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)")
    assert not is_out_overload("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1)")


def test_formula_index_separates_calls_and_methods_and_skips_other_layouts() -> None:
    index = build_formula_index(
        """
- name: mean(Tensor self) -> Tensor
  dispatch:
    Default:
      self: expand_grad(grad, self.sym_sizes()) / self.sym_numel()
    AutogradNestedTensor:
      self: nested_only_helper(grad)
- name: abs(Tensor self) -> Tensor
  self: grad * self.sgn()
  result: handle_r_to_c(result.scalar_type(), self_t.conj() * self_p.sgn())
""",
        "derivatives.yaml",
    )
    assert index.calls == {"expand_grad": ["mean"], "handle_r_to_c": ["abs"]}
    assert index.methods["sgn"] == ["abs"] and "nested_only_helper" not in index.calls


def test_definitions_by_scan_finds_what_an_unreadable_file_defines() -> None:
    text = "void add_kernel(TensorIterator& it) {\n if (x) {\nREGISTER_DISPATCH(add_stub, &add_kernel)\nTORCH_IMPL_FUNC(add_out) (const Tensor& r) {"
    assert definitions_by_scan(text) == ["add_kernel", "add_out", "add_stub"]


def test_uses_tell_calls_and_passed_functions_from_variables_members_and_the_op_api() -> None:
    [item] = read("""
        void user(TensorIteratorBase& iter, bool h) {
          int64_t size = iter.numel();
          auto fn = h ? helper_a<float> : helper_b<float>;
          cpu_kernel(iter, scale_op);
          REGISTER_LIKE(&cpublas::gemm_impl);
          table = {first_fn, second_fn};
          at::sum(iter.tensor(0));
          at::native::direct_helper(size);
          packed->run(size);
          std::copy(a, b, c);
        }
    """).values()
    op_api = frozenset({"sum"})
    function_uses = {n for n in item.refs if item.uses(n, "function", op_api)}
    assert {"helper_a", "helper_b", "scale_op", "gemm_impl", "first_fn", "second_fn",
            "direct_helper", "cpu_kernel"} <= function_uses  # fmt: skip
    assert not {"size", "sum", "run", "copy", "numel"} & function_uses
    assert "copy" not in item.refs  # std::copy is not ATen's
    assert not item.uses("run", "method:PackedLinearWeight", op_api)
    assert item.uses("run", "method:", op_api)  # a method whose class is not known: by name
    assert item.uses("size", "any", op_api)
