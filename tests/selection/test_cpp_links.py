"""C++ changes over real git commits of an upstream-shaped ATen tree: what the Detector records
(`ChangeSet.cpp`) and which ATen ops `CppLinks` reaches, with which evidence."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from selection.cpp.blind_spot import release_blind_spot
from selection.cpp.detect import LAYOUT_ONLY, WHOLE_FILE
from selection.detect import Detector
from selection.device import DeviceFacts
from selection.links.cpp import (
    CppLinks,
    CppReached,
    cpp_indexes,
    in_scope_aten,
    is_gradient_only,
    release_cpp_blind_spot,
)
from selection.links.index import LinkIndex
from selection.model import ChangeKind, ChangeSet, CppChange, Revision
from selection.oplists import OpDatabase
from selection.pipeline import SelectOptions, prepare
from selection.sources.tree import DirTree, GitTree, changed_paths
from selection.state import PipelineState
from selection.universe import Universe
from selection.upstream import ParsedTrees
from tests.support.cpp_upstream import (
    ACTIVATION,
    BINARY_KERNEL,
    BINARY_OPS,
    COMPOSITE,
    CUDA_FILE,
    CUDA_FUSED,
    DERIVATIVES,
    FAST_ROUTE,
    FILES,
    ITERATOR,
    MANUAL,
    NATIVE_FUNCTIONS,
    CppUpstream,
)
from tests.support.upstream_repo import build_upstream, write_manifest


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> CppUpstream:
    return CppUpstream(tmp_path_factory.mktemp("aten") / "pytorch")


class Linked:
    """The detected change set and each C++ change with what CppLinks says about it."""

    def __init__(self, upstream: CppUpstream, head: str, base_sha: str | None = None) -> None:
        base_sha = base_sha or upstream.base
        base = ParsedTrees(GitTree(upstream.repo, base_sha))
        head_trees = ParsedTrees(GitTree(upstream.repo, head))
        self.changes: ChangeSet = Detector(base, head_trees).detect(
            Revision("base", base_sha),
            Revision("head", head),
            changed_paths(upstream.repo, base_sha, head),
        )
        index = LinkIndex(head_trees, base, OpDatabase(), Universe(), DeviceFacts())
        self.results = [(c, CppLinks().explain(c, index)) for c in self.changes.cpp]

    def functions(self) -> list[tuple[str, str, ChangeKind]]:
        return [(c.path, c.function, c.kind) for c in self.changes.cpp]

    def only(self) -> tuple[CppChange, CppReached]:
        assert len(self.results) == 1, self.functions()
        return self.results[0]

    def ops(self) -> set[str]:
        return {link.target.name for _, reached in self.results for link in reached.links}


UNUSED = "int64_t frobnicate_version() {\n  return 2;\n}"


def evidence(reached: CppReached, op: str) -> list[str]:
    link = next(link for link in reached.links if link.target.name == op)
    return [str(step) for step in link.evidence]


def test_changed_cpu_kernel_reaches_its_op_through_the_dispatch_stub(upstream: CppUpstream) -> None:
    head = upstream.change(BINARY_KERNEL, "return a * b;", "return b * a;")
    run = Linked(upstream, head)
    change, reached = run.only()
    assert (change.function, change.kind, change.role) == (
        "at::native::mul_kernel",
        ChangeKind.modified,
        "function",
    )
    assert change.file_local  # anonymous namespace
    assert {link.target.name for link in reached.links} == {"mul.out", "mul.Tensor"}
    assert evidence(reached, "mul.Tensor") == [
        f"{BINARY_KERNEL}:ALSO_REGISTER_AVX512_DISPATCH(mul_stub) registers mul_kernel for mul_stub (CPU)",
        f"{BINARY_OPS}:at::native::TORCH_IMPL_FUNC(mul_out) calls mul_stub",
        f"{NATIVE_FUNCTIONS}:mul.Tensor dispatch CPU: mul_out (structured; mul.Tensor delegates to mul.out)",
    ]
    assert not any(is_gradient_only(link) for link in reached.links)
    assert (reached.no_effect, reached.canary, reached.blind_spots) == ("", "", [])


def test_a_kernel_reaches_the_composite_ops_that_call_its_op_through_the_dispatcher(
    upstream: CppUpstream,
) -> None:
    """frobnicate (CompositeImplicitAutograd) calls at::mul: its tests run mul's CPU kernel."""
    calling = upstream.change(COMPOSITE, "out.mul_(2);", "out = at::mul(out, out);")
    head = upstream.change(BINARY_KERNEL, "return a * b;", "return b * a;", on=calling)
    run = Linked(upstream, head, base_sha=calling)
    _, reached = run.only()
    assert {link.target.name for link in reached.links} == {"mul.out", "mul.Tensor", "frobnicate"}
    assert evidence(reached, "frobnicate")[-4:] == [
        f"{NATIVE_FUNCTIONS}:mul.out dispatch CPU: mul_out",
        f"{COMPOSITE}:at::native::frobnicate_impl calls at::mul (the op, through the dispatcher)",
        f"{COMPOSITE}:at::native::frobnicate calls frobnicate_impl",
        f"{NATIVE_FUNCTIONS}:frobnicate no dispatch: CompositeImplicitAutograd kernel frobnicate",
    ]


def test_changed_structured_impl_reaches_every_overload_of_its_group(upstream: CppUpstream) -> None:
    head = upstream.change(
        BINARY_OPS, "add_stub(device_type(), *this, alpha);", "add_stub(kCPU, *this, alpha);"
    )
    change, reached = Linked(upstream, head).only()
    assert (change.function, change.role, change.defines) == (
        "at::native::TORCH_IMPL_FUNC(add_out)",
        "impl",
        ("add_out",),
    )
    assert {link.target.name for link in reached.links} == {"add.out", "add.Tensor", "add_.Tensor"}
    assert evidence(reached, "add_.Tensor") == [
        f"{NATIVE_FUNCTIONS}:add_.Tensor dispatch CPU: add_out (structured; add_.Tensor delegates to add.out)"
    ]


def test_changed_meta_function_reaches_its_structured_group(upstream: CppUpstream) -> None:
    head = upstream.change(
        BINARY_OPS,
        "build_borrowing_binary_op(maybe_get_output(), self, other);\n}\n\nTORCH_META_FUNC2(mul",
        "build_borrowing_binary_op(maybe_get_output(), other, self);\n}\n\nTORCH_META_FUNC2(mul",
    )
    change, reached = Linked(upstream, head).only()
    assert (change.function, change.role) == ("at::meta::TORCH_META_FUNC2(add, Tensor)", "meta")
    assert {link.target.name for link in reached.links} == {"add.out", "add.Tensor", "add_.Tensor"}


def test_static_helper_is_reached_through_its_callers(upstream: CppUpstream) -> None:
    head = upstream.change(BINARY_KERNEL, "return a + alpha * b;", "return a + b * alpha;")
    change, reached = Linked(upstream, head).only()
    assert change.function.endswith("::scaled") and change.file_local
    assert {link.target.name for link in reached.links} == {"add.out", "add.Tensor", "add_.Tensor"}
    assert evidence(reached, "add.Tensor")[:3] == [
        f"{BINARY_KERNEL}:at::native::add_kernel calls scaled",
        f"{BINARY_KERNEL}:REGISTER_DISPATCH(add_stub) registers add_kernel for add_stub (CPU)",
        f"{BINARY_OPS}:at::native::TORCH_IMPL_FUNC(add_out) calls add_stub",
    ]


def test_static_helper_of_an_implicit_composite_kernel(upstream: CppUpstream) -> None:
    head = upstream.change(COMPOSITE, "out.mul_(2);", "out.mul_(3);")
    change, reached = Linked(upstream, head).only()
    assert change.function == "at::native::frobnicate_impl"
    [link] = reached.links
    assert link.target.name == "frobnicate"
    assert [str(s) for s in link.evidence] == [
        f"{COMPOSITE}:at::native::frobnicate calls frobnicate_impl",
        f"{NATIVE_FUNCTIONS}:frobnicate no dispatch: CompositeImplicitAutograd kernel frobnicate",
    ]


def test_functions_manual_helper_reaches_only_the_op_whose_formula_calls_it(
    upstream: CppUpstream,
) -> None:
    head = upstream.change(
        MANUAL, "auto out = grad * other.conj();", "auto out = other.conj() * grad;"
    )
    change, reached = Linked(upstream, head).only()
    assert (change.function, change.area) == (
        "torch::autograd::generated::details::mul_tensor_backward",
        "autograd",
    )
    [link] = reached.links
    assert link.target.name == "mul.Tensor"
    assert is_gradient_only(link)
    assert link.evidence[-1].path == DERIVATIVES
    assert "derivative formula calls mul_tensor_backward" in link.evidence[-1].how


def test_functions_manual_helper_used_by_another_helper_reaches_both_formulas(
    upstream: CppUpstream,
) -> None:
    head = upstream.change(
        MANUAL, "return at::real(gradient_result);", "return at::imag(gradient_result);"
    )
    _, reached = Linked(upstream, head).only()
    assert {link.target.name for link in reached.links} == {"add.Tensor", "mul.Tensor"}
    assert all(is_gradient_only(link) for link in reached.links)
    assert evidence(reached, "mul.Tensor")[0] == (
        f"{MANUAL}:torch::autograd::generated::details::mul_tensor_backward calls handle_r_to_c"
    )


def test_backward_kernel_reaches_the_op_whose_formula_calls_it_as_gradient_only(
    upstream: CppUpstream,
) -> None:
    head = upstream.change(
        ACTIVATION,
        "auto grad_input = at::empty_like(self);",
        "auto grad_input = at::zeros_like(self);",
    )
    _, reached = Linked(upstream, head).only()
    by_op = {link.target.name: link for link in reached.links}
    assert set(by_op) == {"gelu_backward", "gelu"}
    assert not is_gradient_only(by_op["gelu_backward"])
    assert is_gradient_only(by_op["gelu"])


def test_cuda_only_file_is_no_effect_with_its_reason(upstream: CppUpstream) -> None:
    head = upstream.change(CUDA_FILE, "GeluCUDAKernelImpl(*this", "GeluCUDAKernelImplV2(*this")
    change, reached = Linked(upstream, head).only()
    assert change.function == WHOLE_FILE
    assert reached.links == []
    assert reached.no_effect == change.no_effect
    assert "under cuda/: another device's code" in reached.no_effect


def test_helper_only_another_device_uses_is_no_effect(upstream: CppUpstream) -> None:
    head = upstream.change(
        FAST_ROUTE, "&& b.is_contiguous()", "&& b.is_non_overlapping_and_dense()"
    )
    change, reached = Linked(upstream, head).only()
    assert change.function == "at::native::can_use_fast_route"
    assert reached.links == []
    assert reached.no_effect == f"only another device's code uses it ({CUDA_FUSED})"


def test_kernel_only_another_layout_runs_is_no_effect(upstream: CppUpstream) -> None:
    head = upstream.change(COMPOSITE, "return self.coalesce();", "return self.coalesce().clone();")
    change, reached = Linked(upstream, head).only()
    assert change.function == "at::native::sparse_only_cpu"
    assert reached.links == []
    assert reached.no_effect.startswith(
        "only another device's or layout's kernels run it (SparseCPU"
    )


def test_comment_and_layout_only_change_is_no_change(upstream: CppUpstream) -> None:
    head = upstream.change(
        BINARY_KERNEL,
        "void mul_kernel(TensorIteratorBase& iter) {",
        "// Multiplies elementwise.\n/* vectorized by cpu_kernel */\nvoid mul_kernel(\n    TensorIteratorBase& iter)\n{",
    )
    run = Linked(upstream, head)
    change, reached = run.only()
    assert (change.function, change.no_effect) == (WHOLE_FILE, LAYOUT_ONLY)
    assert reached.links == [] and reached.no_effect == LAYOUT_ONLY
    assert run.changes.unparseable == []


def test_unparseable_file_is_reported_and_its_dependents_widen(upstream: CppUpstream) -> None:
    head = upstream.change(BINARY_KERNEL, "} // namespace\n", "// namespace left open\n")
    run = Linked(upstream, head)
    [file] = [f for f in run.changes.files if f.parse_error]
    assert file.path == BINARY_KERNEL and "never closed" in file.parse_error
    assert run.changes.unparseable == []  # widened by the C++ link kind, finer than "all"
    change, reached = run.only()
    assert (change.function, change.parse_error) == (WHOLE_FILE, file.parse_error)
    assert {"add.out", "add.Tensor", "mul.out", "mul.Tensor"} <= run.ops()
    assert any(
        BINARY_KERNEL in spot and "could not be read" in spot for spot in reached.blind_spots
    )


def test_core_aten_change_is_a_canary_cause(upstream: CppUpstream) -> None:
    head = upstream.change(
        ITERATOR, "compute_shape(config);", "compute_shape(config);\n  compute_types(config);"
    )
    change, reached = Linked(upstream, head).only()
    assert (change.area, change.function) == ("core", "at::TensorIteratorBase::build")
    assert reached.links == []
    assert "ATen/c10 core C++" in reached.canary


def test_added_function_no_kernel_uses_yet_is_no_effect(upstream: CppUpstream) -> None:
    head = upstream.change(
        COMPOSITE, "Tensor sparse_only_cpu", f"{UNUSED}\n\nTensor sparse_only_cpu"
    )
    change, reached = Linked(upstream, head).only()
    assert (change.function, change.kind) == ("at::native::frobnicate_version", ChangeKind.added)
    assert reached.links == [] and reached.no_effect.startswith("added")


def test_change_nothing_reaches_is_a_blind_spot_with_a_canary(upstream: CppUpstream) -> None:
    with_unused = upstream.change(
        COMPOSITE, "Tensor sparse_only_cpu", f"{UNUSED}\n\nTensor sparse_only_cpu"
    )
    head = upstream.change(COMPOSITE, "return 2;", "return 3;", on=with_unused)
    change, reached = Linked(upstream, head, base_sha=with_unused).only()
    assert (change.function, change.kind) == ("at::native::frobnicate_version", ChangeKind.modified)
    assert reached.links == []
    assert "no kernel, dispatch stub or derivative formula reaches it" in reached.canary
    assert reached.blind_spots == [reached.canary]


def test_release_blind_spot_counts_the_kernels_wheels_cannot_show(tmp_path: Path) -> None:
    """In a release mirror the YAML lives under torchgen/packaged and there is no C++."""
    for rel, packaged in (
        (NATIVE_FUNCTIONS, "torchgen/packaged/ATen/native/native_functions.yaml"),
        (DERIVATIVES, "torchgen/packaged/autograd/derivatives.yaml"),
    ):
        file = tmp_path / packaged
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(FILES[rel]).lstrip("\n"), encoding="utf-8")
    trees = ParsedTrees(DirTree(tmp_path))
    indexes = cpp_indexes(LinkIndex(trees, trees, OpDatabase(), Universe(), DeviceFacts()))
    assert indexes.native is not None and indexes.problem == ""
    spot = release_blind_spot(indexes.native, indexes.formulas, {"add", "gelu"})
    # add.out: add_out (CPU; SparseCPU is not ours); gelu.out: gelu_out_cpu; add's formula
    # calls handle_r_to_c (a helper), gelu's calls gelu_backward (an op, not a helper).
    assert (spot.ops, spot.kernels, spot.helpers) == (2, 2, 1)
    assert spot.text.startswith("release wheels hold no C++: changes to the 2 C++ kernels")


def test_release_blind_spot_counts_from_the_universe_of_a_release_mirror(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The shared upstream-shaped release (torchgen/packaged YAML, no C++): the in-scope ops
    are those of the enumerated instances, found through the real Map stage."""
    release = build_upstream(tmp_path_factory.mktemp("release") / "pytorch")
    opts = SelectOptions(
        from_=release.base,
        to=release.base,
        pytorch_repo=release.path,
        manifests=[write_manifest(tmp_path_factory.mktemp("manifests"))],
    )
    request, _ = prepare(opts)
    state = PipelineState(request)
    db, universe = state.database(), state.instances()
    index = LinkIndex(request.head_trees, request.base_trees, db, universe, request.facts)
    assert {"add", "mul", "abs"} <= in_scope_aten(index)
    spot = release_cpp_blind_spot(index)
    assert spot is not None
    # add.Tensor: add_kernel (CPU; MPS is not ours), mul.Tensor: mul, abs: abs (composite).
    assert (spot.kernels, spot.helpers) == (3, 0)
    assert "3 C++ kernels" in spot.text and "--pytorch-repo" in spot.text


def test_changed_conditional_compilation_reaches_the_file_s_definitions(
    upstream: CppUpstream,
) -> None:
    head = upstream.change(
        BINARY_KERNEL,
        "void mul_kernel(TensorIteratorBase& iter) {",
        "#if !defined(C10_MOBILE)\nvoid mul_kernel(TensorIteratorBase& iter) {",
    )
    head = upstream.change(BINARY_KERNEL, "} // namespace\n", "} // namespace\n#endif\n", on=head)
    run = Linked(upstream, head)
    change, _ = run.only()
    assert (change.function, change.role) == ("#if/#endif (conditional compilation)", "directives")
    assert {"add.out", "add.Tensor", "mul.out", "mul.Tensor"} <= run.ops()


def test_function_bound_by_torch_library_impl_reaches_the_bound_op(upstream: CppUpstream) -> None:
    head = upstream.change(COMPOSITE, "return self.flip(0);", "return self.flip(-1);")
    change, reached = Linked(upstream, head).only()
    assert change.function == "at::native::wiggle_cpu"
    [link] = reached.links  # the SparseCPU block binds it too, for another layout
    assert link.target.name == "wiggle"
    assert [str(s) for s in link.evidence] == [
        f"{COMPOSITE}:at::native::TORCH_LIBRARY_IMPL(aten, CPU) binds wiggle_cpu",
        f"{COMPOSITE}:at::native::TORCH_LIBRARY_IMPL(aten, CPU) m.impl('wiggle') for CPU",
    ]
