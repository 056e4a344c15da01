"""The C++ calls between ATen ops, read from a release's libtorch_cpu.so (link kind
`native-call`, selection.links.native_calls).

The library is the installed torch 2.13.0's own (a real release binary); the release-mode
runs put it into wheels built from an upstream-shaped repository, so `--from 9.1 --to 9.2`
reads it as it reads a real wheel's.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
import torch

from selection.cpp.binary_calls import (
    MAX_DEPTH,
    BinaryCode,
    CallGraph,
    LibraryCalls,
    OpCall,
    library_calls,
    ops_called,
    qualified_name,
)
from selection.cpp.native_index import FormulaIndex, build_formula_index, build_native_index
from selection.links.native_calls import (
    DECIDERS,
    LIBRARY,
    NOTE_PREFIX,
    Called,
    Definition,
    native_call_uses,
)
from selection.pipeline import SelectOptions, prepare, run_pipeline
from selection.sources.elf import ElfError, read_call_graph
from selection.sources.native_binary import LIBRARY_DECIDERS
from selection.sources.release_tests import ReleaseTestSource
from selection.state import PipelineState
from tests.support.observed_runs import linked, linked_ops, manifest_file
from tests.support.release_wheels import write_wheel
from tests.support.upstream_library import add_library
from tests.support.upstream_repo import MANIFEST, UpstreamRepo, build_upstream

INSTALLED = Path(os.path.dirname(torch.__file__)) / "lib" / "libtorch_cpu.so"
VERSIONS = ["9.1.0", "9.2.0"]
DECOMPOSITIONS = "torch/_decomp/decompositions.py"
PACKAGED_NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
HARDTANH_DECOMPOSITION = """

@register_decomposition(aten.hardtanh.default)
def hardtanh(a, min_val=-1.0, max_val=1.0):
    return torch.clamp(a, min_val, max_val)
"""


@pytest.fixture(scope="module")
def library() -> CallGraph:
    return read_call_graph(INSTALLED)


@pytest.fixture(scope="module")
def library_calls_(library: CallGraph) -> LibraryCalls:
    return library_calls(library)


def test_mangled_names_are_read_up_to_their_parameters() -> None:
    assert qualified_name(b"_ZN2at6native10avg_pool1dERKNS_6TensorEN3c108ArrayRefIlEE") == (
        "at",
        "native",
        "avg_pool1d",
    )
    assert qualified_name(b"_ZN2at4_ops10avg_pool2d4callERKNS_6TensorE") == (
        "at",
        "_ops",
        "avg_pool2d",
        "call",
    )
    assert qualified_name(b"_ZN2at6nativeL7check1dEPKcS2_N3c108ArrayRefIlEE.isra.0") == (
        "at",
        "native",
        "check1d",
    )
    assert qualified_name(b"_ZL6helperv") == ("helper",)
    assert qualified_name(b"memcpy") == ("memcpy",)


def test_a_composite_kernel_calls_ops_through_the_dispatcher(library: CallGraph) -> None:
    """at::native::avg_pool1d unsqueezes, calls avg_pool2d and squeezes (the PLT calls of
    at::_ops::*::call); at::native::chunk calls split or split_with_sizes."""
    pool = {c.struct for c in ops_called(library, library.defined(("at", "native", "avg_pool1d")))}
    assert {"avg_pool2d", "unsqueeze", "squeeze_dim"} <= pool
    chunk = {c.struct for c in ops_called(library, library.defined(("at", "native", "chunk")))}
    assert "split_with_sizes" in chunk


def test_helpers_in_atens_namespaces_are_followed_with_the_chain(library: CallGraph) -> None:
    """take_along_dim calls gather itself and view through its anonymous-namespace helper."""
    calls = ops_called(library, library.defined(("at", "native", "take_along_dim")))
    by_struct = {c.struct: c.via for c in calls}
    assert by_struct["gather"] == ()
    assert any("_take_along_dim_helper" in step for via in by_struct.values() for step in via)


def _graph(calls: dict[bytes, list[bytes]]) -> CallGraph:
    """A call graph of mangled names: caller -> callees (every name a function)."""
    names = list(dict.fromkeys([*calls, *(c for callees in calls.values() for c in callees)]))
    edges = [(names.index(a), names.index(b)) for a, callees in calls.items() for b in callees]
    callers = np.array([a for a, _ in edges], dtype=np.int64)
    callees_ = np.array([b for _, b in edges], dtype=np.int64)
    return CallGraph.from_edges("synthetic", names, callers, callees_, len(names))


def test_op_api_wrappers_emitted_out_of_line_are_transparent() -> None:
    """GCC emits some of Functions.h's and TensorBody.h's inline wrappers as functions:
    a kernel calling `at::convolution_symint` or `at::Tensor::narrow` calls their ops, also
    from a helper at the last depth followed; c10 is not a wrapper scope."""
    convolution = b"_ZN2at4_ops11convolution4callERKNS_6TensorE"
    helpers = [b"_ZN2at6native2h%dEv" % i for i in range(1, MAX_DEPTH + 2)]
    graph = _graph(
        {
            b"_ZN2at6native6conv2dEv": [
                b"_ZN2at18convolution_symintEv",
                b"_ZN3c106detail5checkEv",
                helpers[0],
            ],
            b"_ZN2at18convolution_symintEv": [convolution],
            b"_ZN3c106detail5checkEv": [b"_ZN2at4_ops3add4callEv"],
            **{a: [b] for a, b in itertools.pairwise(helpers)},
            helpers[MAX_DEPTH - 1]: [helpers[MAX_DEPTH], b"_ZNK2at6Tensor6narrowEllll"],
            b"_ZNK2at6Tensor6narrowEllll": [b"_ZN2at4_ops6narrow4callEv"],
            helpers[MAX_DEPTH]: [b"_ZN2at4_ops3mul4callEv"],
        }
    )
    calls = {c.struct: c.via for c in ops_called(graph, graph.defined(("at", "native", "conv2d")))}
    assert calls["convolution"] == ()
    assert len(calls["narrow"]) == MAX_DEPTH  # through the helpers, none for the wrapper
    assert "add" not in calls and "mul" not in calls  # c10; a helper past MAX_DEPTH


def test_conv2d_reaches_convolution_through_its_out_of_line_wrapper(library: CallGraph) -> None:
    """2.13.0's at::native::conv2d_symint calls at::convolution_symint (an .isra clone of
    Functions.h's inline wrapper), which calls at::_ops::convolution::call: so a change to
    meta_conv (registered for aten.convolution) reaches conv2d's traced tests."""
    kernel = library.defined(("at", "native", "conv2d_symint"))
    assert "convolution" in {c.struct for c in ops_called(library, kernel)}


def _imported(module: str) -> set[str]:
    """The `selection` modules `module` imports, in functions too (not under TYPE_CHECKING);
    `from selection.python import operators` imports the submodule."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    checking = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for n in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in checking:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("selection"):
            found.add(str(node.module))
            found |= {sub for a in node.names if _is_module(sub := f"{node.module}.{a.name}")}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("selection.")}
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _closure(modules: Iterable[str]) -> set[str]:
    seen: set[str] = set()
    pending = list(modules)
    while pending:
        module = pending.pop()
        if module not in seen:
            seen.add(module)
            pending.extend(_imported(module))
    return seen


def test_cached_calls_are_keyed_by_every_module_computing_them() -> None:
    """A cached result is stale once the code computing it changes: the cache keys hash the
    sources of DECIDERS (clone reads) and LIBRARY_DECIDERS (a library's calls), which must
    hold what their modules import (native_yaml parses the yaml, links.base makes the Step)."""
    assert _closure(DECIDERS) == set(DECIDERS)
    readers = ("selection.cpp.binary_calls", "selection.sources.elf")
    assert _closure(readers) <= set(LIBRARY_DECIDERS)


NATIVE = """
- func: hinge_embedding_loss(Tensor self, Tensor target, float margin=1.0, int reduction=Mean) -> Tensor
{dispatch}
- func: clamp_min(Tensor self, Scalar min) -> Tensor
  dispatch:
    CPU: clamp_min

- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: where
"""


def _calls(library: LibraryCalls, dispatch: str) -> dict[str, list[str]]:
    text = NATIVE.replace("{dispatch}", dispatch)
    native = build_native_index(text, "native_functions.yaml")
    code = BinaryCode(library, native.overloads, "installed", LIBRARY)
    calls = native_call_uses(code, native, FormulaIndex(), native.overloads)
    return {op: [called for called, _ in found] for op, found in calls.kernels.items()}


def test_only_kernels_that_run_where_the_op_is_traced_count(
    library_calls_: LibraryCalls,
) -> None:
    """hinge_embedding_loss's composite kernel calls clamp_min and where: edges to the ops
    native_functions.yaml has; as a CPU kernel the same code runs only eagerly, in C++."""
    composite = _calls(library_calls_, "")
    assert composite == {"hinge_embedding_loss": ["clamp_min", "where"]}
    explicit = "  dispatch:\n    CompositeExplicitAutograd: hinge_embedding_loss\n"
    assert _calls(library_calls_, explicit) == composite
    assert _calls(library_calls_, "  dispatch:\n    CPU: hinge_embedding_loss\n") == {}


def test_a_kernel_serving_two_traced_keys_is_read_once() -> None:
    """`CompositeExplicitAutograd, Meta: fill` names one kernel: one kernel read, its calls
    looked up once (the note counts kernels; it said 1,455 on 2.13.0 for fewer kernels)."""
    native = build_native_index(
        "- func: fill.Scalar(Tensor self, Scalar value) -> Tensor\n"
        "  dispatch:\n    CompositeExplicitAutograd, Meta: fill\n"
        "- func: copy(Tensor self, Tensor src) -> Tensor\n  dispatch:\n    CPU: copy\n",
        "native_functions.yaml",
    )
    library = LibraryCalls("synthetic", {"at::native::fill": (OpCall("copy", ()),)})
    code = BinaryCode(library, native.overloads, "synthetic", LIBRARY)
    calls = native_call_uses(code, native, FormulaIndex(), native.overloads)
    assert [called for called, _ in calls.kernels["fill"]] == ["copy"]
    assert calls.kernels_read == 1
    assert code.kernel("fill", "Meta")[0] is code.kernel("fill", "CompositeExplicitAutograd")[0]


def test_a_formula_helper_links_the_op_to_what_the_helper_calls(
    library_calls_: LibraryCalls,
) -> None:
    native_text = """
- func: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
  dispatch:
    CPU: pow
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU: mul
"""
    formulas = build_formula_index(
        "- name: pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor\n"
        "  self: pow_backward(grad, self, exponent)\n",
        "derivatives.yaml",
    )
    native = build_native_index(native_text, "native_functions.yaml")
    code = BinaryCode(library_calls_, native.overloads, "installed", LIBRARY)
    calls = native_call_uses(code, native, formulas, native.overloads)
    [(called, step)] = calls.formulas["pow"]
    assert called == "mul"
    assert "pow_backward" in step.how and "at::_ops::mul_" in step.how
    assert calls.kernels == {}


def test_a_file_that_is_not_an_elf_library_is_refused_with_its_name(tmp_path: Path) -> None:
    text = tmp_path / "libtorch_cpu.so"
    text.write_text("not a library\n")
    with pytest.raises(ElfError, match=r"libtorch_cpu\.so: not a 64-bit little-endian ELF"):
        read_call_graph(text)
    truncated = tmp_path / "truncated.so"
    truncated.write_bytes(INSTALLED.read_bytes()[:4096])
    with pytest.raises(ElfError, match=r"truncated\.so: truncated"):
        read_call_graph(truncated)


# -- release mode: wheels holding the library ------------------------------------------------


def _cache(releases: tuple[UpstreamRepo, Path], root: Path, with_library: bool) -> Path:
    """A cache holding both releases' wheels, with or without the real library."""
    members = {LIBRARY: INSTALLED} if with_library else {}
    for version in VERSIONS:
        write_wheel(root / "cache", releases[0].repo, f"v{version}", version, members)
    return root / "cache"


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[UpstreamRepo, Path]:
    """9.1.0 decomposes hardtanh in Python; 9.2.0 changes that decomposition. relu6's
    OpInfo reaches hardtanh only through relu6's C++ composite kernel (the Python
    `F.relu6` calls `F.hardtanh`, which clamps)."""
    upstream = build_upstream(tmp_path_factory.mktemp("remote") / "pytorch")
    _, manifest_text = add_library(upstream, MANIFEST)
    exp = "\n\n@register_decomposition([aten.exp"
    upstream.edit(DECOMPOSITIONS, exp, HARDTANH_DECOMPOSITION + exp)
    upstream.commit("hardtanh's decomposition")
    upstream.repo.create_tag("v9.1.0", force=True)  # the base release, with the library
    upstream.edit(DECOMPOSITIONS, "clamp(a, min_val, max_val)", "clamp(a, max_val, min_val)")
    upstream.commit("hardtanh's bounds swapped")
    upstream.repo.create_tag("v9.2.0")
    manifests = manifest_file(tmp_path_factory.mktemp("manifests"), manifest_text)
    return upstream, manifests


def _select(cache: Path, manifest: Path) -> PipelineState:
    options = SelectOptions(
        from_="9.1",
        to="9.2",
        manifests=[manifest],
        cache=cache,
        deps="none",
        available_versions=lambda: list(VERSIONS),
        tests=ReleaseTestSource(None),
    )
    request, notes = prepare(options)
    state = run_pipeline(request)
    state.notes.extend(notes)
    return state


def test_a_decomposition_change_reaches_the_op_whose_composite_kernel_calls_it(
    releases: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    cache = _cache(releases, tmp_path, with_library=True)
    state = _select(cache, releases[1])
    relu6 = [
        c
        for c in state.candidates.values()
        if c.instance.op == "nn.functional.relu6" and c.instance.template == "test_fake"
    ]
    assert relu6, "relu6's traced instances are reached through its C++ kernel"
    evidence = " | ".join(step for cause in relu6[0].causes for step in cause.evidence)
    assert "at::native::relu6" in evidence and "at::_ops::hardtanh::call" in evidence
    assert not any(
        c.instance.op == "nn.functional.relu6" and c.instance.template == "test_out"
        for c in state.candidates.values()
    ), "an eager template runs the C++ kernel, not the decomposition"
    assert any("C++ calls between ops from torch/lib/libtorch_cpu.so" in n for n in state.notes)
    assert not [p for p in cache.iterdir() if p.name.startswith("libtorch-")]  # scratch removed


def test_without_the_library_the_run_says_why_and_goes_on(
    releases: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    state = _select(_cache(releases, tmp_path, with_library=False), releases[1])
    [note] = [n for n in state.notes if "C++ calls between ops not read" in n]
    assert LIBRARY in note and "\n" not in note
    assert ("nn.functional.relu6", "float16") not in linked_ops(state)


@pytest.fixture(scope="module")
def default_releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[UpstreamRepo, Path]:
    """9.2.0 changes hardtanh's default `max_val` (position 2) in the packaged
    native_functions.yaml. The real library's relu6 kernel calls hardtanh; PyTorch 2.6.0's
    source (the packaged record) passes it three arguments."""
    upstream = build_upstream(tmp_path_factory.mktemp("remote") / "pytorch")
    _, manifest_text = add_library(upstream, MANIFEST)
    upstream.repo.create_tag("v9.1.0", force=True)
    upstream.edit(PACKAGED_NATIVE, "Scalar max_val=1)", "Scalar max_val=2)")
    upstream.commit("hardtanh's default max_val")
    upstream.repo.create_tag("v9.2.0")
    manifests = manifest_file(tmp_path_factory.mktemp("manifests"), manifest_text)
    return upstream, manifests


def test_a_release_default_change_doubts_the_kernels_an_older_source_saw_pass_it(
    default_releases: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """The library cannot say whether relu6's compiled call omitted max_val; 2.6.0's source
    passed it: relu6 is not reached through its kernel (nor is anything else: no entry tests
    hardtanh), a blind spot says why, and a canary runs relu6's own tests, once per dtype.
    The change is not also called "no effect"."""
    state = _select(_cache(default_releases, tmp_path, with_library=True), default_releases[1])
    assert linked_ops(state) == set()
    [doubt] = [b for b in state.blind_spots if "hardtanh" in b]
    assert "(max_val)" in doubt and "1 calling op (composite or meta kernels)" in doubt
    assert "PyTorch 2.6.0's C++ source" in doubt
    assert doubt.endswith("a canary runs the tests nearest 1 of them (relu6)")
    canaried = {
        (c.instance.op, c.instance.dtype)
        for c in state.candidates.values()
        if any(cause.kind == "canary" and cause.summary == doubt for cause in c.causes)
    }
    reused = {(i.op, i.dtype) for i in state.reused if i.op == "nn.functional.relu6"}
    assert canaried == reused and len(reused) == 2
    assert state.mapped is not None
    assert not [n for n in state.mapped.no_effect if "hardtanh" in n]
    [note] = [n for n in state.notes if n.startswith(NOTE_PREFIX)]
    assert "PyTorch 2.6.0's C++ source" in note


def test_a_doubt_no_reused_test_is_near_says_that_nothing_runs_for_it(
    default_releases: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """The backend does not reuse relu6: no canary, and the blind spot says so."""
    manifest = default_releases[1]
    without = tmp_path / "manifest.yaml"
    without.write_text(manifest.read_text().replace("      - nn.functional.relu6\n", ""))
    state = _select(_cache(default_releases, tmp_path, with_library=True), without)
    [doubt] = [b for b in state.blind_spots if "hardtanh" in b]
    assert doubt.endswith("no reused test is near any of them (relu6): nothing runs for them")
    assert not any(cause.summary == doubt for c in state.candidates.values() for cause in c.causes)


# -- range and PR modes: the calls read from the clone's C++ source ---------------------------

ACTIVATION = """
#include <ATen/ATen.h>

namespace at::native {

static Tensor clamp_to(const Tensor& self, double low, double high) {
  return at::hardtanh(self, low, high);
}

Tensor relu6(const Tensor& self) {
  return clamp_to(self, 0, 6);
}

Tensor silu_out(const Tensor& self) {
  return self.mul(at::sigmoid(self));
}

} // namespace at::native
"""

FUNCTIONS_MANUAL = """
namespace torch::autograd::generated::details {

Tensor relu6_backward(const Tensor& grad, const Tensor& self) {
  return grad.mul(self.gt(0));
}

} // namespace torch::autograd::generated::details
"""

CLONE_NATIVE = "aten/src/ATen/native/native_functions.yaml"
CLONE_NATIVE_ADDITIONS = """
- func: sigmoid(Tensor self) -> Tensor
  dispatch:
    CPU: sigmoid

- func: gt.Scalar(Tensor self, Scalar other) -> Tensor
  dispatch:
    CPU: gt
"""


def _clone_with_cpp(root: Path) -> tuple[UpstreamRepo, Path]:
    """The library repository as a clone has it: native_functions.yaml under aten/, with
    relu6's composite kernel (through a static helper) and silu's CPU kernel in C++."""
    upstream = build_upstream(root / "pytorch")
    _, manifest_text = add_library(upstream, MANIFEST)
    exp = "\n\n@register_decomposition([aten.exp"
    upstream.edit(DECOMPOSITIONS, exp, HARDTANH_DECOMPOSITION + exp)
    packaged = upstream.read("torchgen/packaged/ATen/native/native_functions.yaml")
    upstream.write(CLONE_NATIVE, packaged + CLONE_NATIVE_ADDITIONS)
    upstream.write("aten/src/ATen/native/Activation.cpp", ACTIVATION)
    upstream.write("torch/csrc/autograd/FunctionsManual.cpp", FUNCTIONS_MANUAL)
    upstream.write(
        "tools/autograd/derivatives.yaml",
        "- name: relu6(Tensor self) -> Tensor\n  self: relu6_backward(grad, self)\n",
    )
    upstream.base = upstream.commit("C++ of the library's ops")
    (root / "manifests").mkdir()
    return upstream, manifest_file(root / "manifests", manifest_text)


def test_in_range_mode_the_calls_come_from_the_clones_source(tmp_path: Path) -> None:
    from selection.cpp.corpus import CppCorpus
    from selection.cpp.source_calls import SourceCode
    from selection.sources.tree import GitTree

    upstream, _ = _clone_with_cpp(tmp_path)
    tree = GitTree(upstream.repo, upstream.base)
    native = build_native_index(tree.read(CLONE_NATIVE) or "", CLONE_NATIVE)
    formulas = build_formula_index(
        tree.read("tools/autograd/derivatives.yaml") or "", "tools/autograd/derivatives.yaml"
    )
    code = SourceCode(CppCorpus(tree), set(native.overloads), "the clone")
    calls = native_call_uses(code, native, formulas, native.overloads)
    [(called, step)] = calls.kernels["relu6"]
    assert called == "hardtanh"
    assert step.path == "aten/src/ATen/native/Activation.cpp"
    assert "at::hardtanh(" in step.how and "clamp_to" in step.how  # through the helper
    assert "silu" not in calls.kernels  # a CPU kernel: eager C++ only
    assert {c for c, _ in calls.formulas["relu6"]} == {"mul", "gt"}


def test_a_decomposition_change_in_a_pr_reaches_the_ops_whose_kernels_call_it(
    tmp_path: Path,
) -> None:
    from tests.support.observed_runs import select_head

    upstream, manifest = _clone_with_cpp(tmp_path)
    head = upstream.change(
        DECOMPOSITIONS, "clamp(a, min_val, max_val)", "clamp(a, max_val, min_val)"
    )
    state = select_head(upstream, manifest, head, tmp_path)
    reached = {i.template for i in linked(state) if i.op == "nn.functional.relu6"}
    assert reached == {"test_fake"}
    assert any("C++ calls between ops from the head's C++ source" in n for n in state.notes)


def test_a_clone_without_native_functions_yaml_says_why_there_are_no_calls(
    tmp_path: Path,
) -> None:
    """The report shows where the C++ calls between ops came from or why there were none: a
    head without aten/src/ATen/native/native_functions.yaml (range and PR modes) gives none."""
    from selection.outputs.report import calls_note
    from tests.support.observed_runs import select_head

    upstream = build_upstream(tmp_path / "pytorch")
    _, manifest_text = add_library(upstream, MANIFEST)
    upstream.base = upstream.commit("the library, no C++")
    (tmp_path / "manifests").mkdir()
    manifest = manifest_file(tmp_path / "manifests", manifest_text)
    exp = "\n\n@register_decomposition([aten.exp"
    head = upstream.change(DECOMPOSITIONS, exp, HARDTANH_DECOMPOSITION + exp)
    state = select_head(upstream, manifest, head, tmp_path)
    assert calls_note(state.notes) == f"{NOTE_PREFIX}: the head has no {CLONE_NATIVE}"


# -- a changed schema default reaches the kernels whose C++ may omit the argument -------------


def test_a_cpp_call_counts_the_arguments_it_passes_receiver_included() -> None:
    """Braces and nested calls hold commas of their own; a called template's arguments
    (`at::symint::slice<T>(`, the op API generic over SymInt; not another namespace's
    `symint`) are no arguments of the call; any other `<` (a comparison, even one followed
    by `> (`: skipping it as template arguments would count too few) makes a count unknown,
    as does a use that is not a call; of several calls of one op, the fewest count."""
    from selection.cpp.items import used_names
    from selection.cpp.tokens import tokenize

    body = """
      auto a = at::hardtanh(self, low, high);
      auto b = self.mul(at::sigmoid(self));
      auto c = at::narrow(t, {x, y}, f(p, q));
      auto d = at::sum(t) + at::sum(t, 0);
      auto e = at::zeros({});
      auto g = at::cat<int>(t, 1);
      auto s = at::symint::slice<T>(t, 0, a, at::symint::size<T>(t, 0));
      auto u = other::symint::select<T>(t);
      g(at::squeeze(t, i < n), b > (c), d);
      if (t.stride < k && m > (n)) {}
      auto h = at::gt(t, i < j ? 1 : 2);
      auto k = std::function(at::clamp);
    """
    found = dict(used_names(list(tokenize(body).texts)).arguments)
    assert found == {
        "hardtanh": 3,
        "mul": 2,
        "sigmoid": 1,
        "narrow": 3,
        "sum": 1,
        "zeros": 1,
        "cat": 2,
        "slice": 4,
        "size": 2,
        "squeeze": None,
        "stride": None,
        "gt": None,
        "clamp": None,
    }


def _default_change_reaches_relu6(tmp_path: Path, clamp_call: str) -> set[str]:
    """Range mode: the head changes hardtanh's default `max_val` (position 2); relu6's
    composite kernel calls hardtanh through its helper as `clamp_call`. The templates of
    relu6's instances the change reaches through its kernel."""
    from tests.support.observed_runs import select_head

    upstream, manifest = _clone_with_cpp(tmp_path)
    upstream.edit(
        "aten/src/ATen/native/Activation.cpp", "at::hardtanh(self, low, high)", clamp_call
    )
    upstream.base = upstream.commit("relu6's kernel as under test")
    head = upstream.change(CLONE_NATIVE, "Scalar max_val=1)", "Scalar max_val=2)")
    state = select_head(upstream, manifest, head, tmp_path)
    return {i.template for i in linked(state) if i.op == "nn.functional.relu6"}


def test_a_default_change_reaches_the_op_whose_kernel_omits_the_argument(tmp_path: Path) -> None:
    """Eagerly too: relu6's composite kernel is what an eager call of relu6 runs, and it now
    gets another max_val."""
    reached = _default_change_reaches_relu6(tmp_path, "at::hardtanh(self, low)")
    assert reached == {"test_fake", "test_out", "test_unary"}


def test_control_a_default_change_passes_by_a_kernel_passing_the_argument(tmp_path: Path) -> None:
    assert _default_change_reaches_relu6(tmp_path, "at::hardtanh(self, low, high)") == set()


def test_an_out_apis_count_is_not_read_its_out_comes_first(tmp_path: Path) -> None:
    """`at::hardtanh_out(out, self, low)` passes three, but `out` is first in C++ and last in
    the schema: the count says nothing of `max_val`, so the call may omit it."""
    reached = _default_change_reaches_relu6(tmp_path, "at::hardtanh_out(out, self, low, high)")
    assert reached == {"test_fake", "test_out", "test_unary"}


class _Kernels:
    """KernelCode whose kernels call what they are given (per kernel name)."""

    source = "given"

    def __init__(self, calls: dict[str, tuple[Called, ...]]) -> None:
        self.calls = calls

    def kernel(self, kernel: str, key: str) -> list[Definition]:
        found = self.calls.get(kernel)
        return [Definition("native/X.cpp", kernel, found)] if found else []

    def helper(self, name: str) -> list[Definition]:
        return []


def test_an_ops_kernels_calling_one_op_keep_the_fewest_arguments_any_passes() -> None:
    """Two composite kernels of one op (overloads) call hardtanh passing three and two
    arguments: the edge passes two; a kernel passing an unknown count makes it unknown."""
    native = build_native_index(
        "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: f_a\n"
        "- func: f.b(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: f_b\n"
        "- func: hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor\n",
        "native_functions.yaml",
    )

    def passed(a: int | None, b: int | None) -> int | None:
        code = _Kernels(
            {
                "f_a": (Called("hardtanh", "at::hardtanh(", (), a),),
                "f_b": (Called("hardtanh", "at::hardtanh(", (), b),),
            }
        )
        calls = native_call_uses(code, native, FormulaIndex(), native.overloads)
        [(called, step)] = calls.kernels["f"]
        assert called == "hardtanh"
        return step.arguments

    assert passed(3, 2) == 2
    assert passed(2, 3) == 2
    assert passed(3, None) is None
    assert passed(None, 3) is None


def test_the_analysis_cache_is_keyed_by_every_module_computing_what_it_holds() -> None:
    """Summaries and symbol comparisons are cached under the hash of ANALYSERS' sources:
    a module one of them imports decides what is cached too (selection.python.operators
    feeds the summaries TorchRefsMode's links read)."""
    from selection.sources.analysis_cache import ANALYSERS

    assert _closure(ANALYSERS) == set(ANALYSERS)


def test_a_quantized_tensors_helper_is_no_call_of_the_dense_kernel_holding_its_branch(
    library: CallGraph,
) -> None:
    """2.13.0's `select_symint` calls `create_subtensor_quantizer` only for a quantized self,
    and that helper slices the quantizer's scales: `select` does not call `slice`, `item` or
    `to` for the dense tensors a device test makes, while its own `as_strided` stays."""
    kernel = library.defined(("at", "native", "select_symint"))
    select = {c.struct for c in ops_called(library, kernel)}
    assert "as_strided" in select
    assert not {"slice_Tensor", "item", "to_dtype"} & select


def test_a_quantized_helper_is_followed_from_a_quantized_root_and_fake_quantize_from_any() -> None:
    """The rule reads the helper's name: a `Quantizer`'s or a quantized kernel's helpers are
    cut from dense kernels only; `fake_quantize_*` (float in, float out) is followed."""
    slice_ = b"_ZN2at4_ops12slice_Tensor4callEv"
    mul = b"_ZN2at4_ops3mul4callEv"
    graph = _graph(
        {
            b"_ZN2at6native6selectEv": [b"_ZN2at6native26create_subtensor_quantizerEv"],
            b"_ZN2at6native26create_subtensor_quantizerEv": [slice_],
            b"_ZN2at6native16select_quantizedEv": [b"_ZN2at6native26create_subtensor_quantizerEv"],
            b"_ZN2at6native5fakesEv": [b"_ZN2at6native31fake_quantize_per_tensor_affineEv"],
            b"_ZN2at6native31fake_quantize_per_tensor_affineEv": [mul],
        }
    )

    def structs(kernel: str) -> set[str]:
        return {c.struct for c in ops_called(graph, graph.defined(("at", "native", kernel)))}

    assert structs("select") == set()
    assert structs("select_quantized") == {"slice_Tensor"}
    assert structs("fakes") == {"mul"}
