"""Each kind of link, over real git commits of an upstream-shaped repository with library
code (tests/support/upstream_library.py): what an edit reaches, with which evidence, and
what it must not reach."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selection.links.derivatives import derivative_uses
from selection.model import Cause
from selection.observed import ObservedMap
from selection.pipeline import SelectOptions, prepare, run_pipeline
from selection.state import PipelineState
from tests.support.observed_runs import select_from
from tests.support.upstream_library import add_library
from tests.support.upstream_repo import (
    INTERNAL,
    MANIFEST,
    MUL_KERNEL_EDIT,
    UpstreamRepo,
    build_upstream,
)

DB = f"{INTERNAL}/common_methods_invocations.py"


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[UpstreamRepo, Path]:
    upstream = build_upstream(tmp_path_factory.mktemp("upstream") / "pytorch")
    _, manifest_text = add_library(upstream, MANIFEST)
    manifest = tmp_path_factory.mktemp("manifests") / "manifest.yaml"
    manifest.write_text(manifest_text.lstrip("\n"), encoding="utf-8")
    return upstream, manifest


def select(library: tuple[UpstreamRepo, Path], head: str, tmp_path: Path) -> PipelineState:
    upstream, manifest = library
    options = SelectOptions(
        from_=upstream.base,
        to=head,
        pytorch_repo=upstream.path,
        manifests=[manifest],
        cache=tmp_path / "cache",
    )
    request, _ = prepare(options)
    return run_pipeline(request)


def selected(state: PipelineState) -> set[str]:
    return {c.instance.name for c in state.candidates.values()}


def map_causes(state: PipelineState) -> list[Cause]:
    return [c for cand in state.candidates.values() for c in cand.causes if c.stage == "map"]


def map_evidence(state: PipelineState) -> list[str]:
    """Every step of evidence the map causes show."""
    return [step for c in map_causes(state) for step in c.evidence]


def edit(library: tuple[UpstreamRepo, Path], path: str, old: str, new: str) -> str:
    return library[0].change(path, old, new)


def test_a_decomposition_helper_reaches_the_op_it_is_registered_for_with_its_evidence(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """Where the op is traced (test_fake), not where it runs its eager kernel (test_out)."""
    head = edit(library, "torch/_decomp/decompositions.py", "x * 0.5", "x / 2")
    state = select(library, head, tmp_path)
    assert selected(state) == {"test_fake_mul_spyre_float16", "test_fake_mul_spyre_float32"}
    [cause] = {c for c in map_causes(state)}
    assert cause.basis == "static"
    assert cause.evidence == (
        "torch/_decomp/decompositions.py:_halve modified",
        "torch/_decomp/decompositions.py:mul calls _halve (line 13)",
        "torch/_decomp/decompositions.py:mul @register_decomposition(aten.mul.Tensor) (line 11)",
        f"{DB}:OpInfo('mul') op defaults to torch.mul, the C binding of aten::mul",
    )


def test_with_a_recording_a_kernel_reaches_the_traced_tests_of_every_pair_dispatching_its_op(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """The recording compiles a pair's first sample only: mul's float32 pair never ran its
    decomposition there, yet its samples dispatch aten::mul, which test_fake traces through
    the decomposition (and `_halve`, which it calls). Its eager tests stay out."""
    observed = ObservedMap(torch_version="9.1.0", device="spyre")
    path = "torch/_decomp/decompositions.py"
    decomposition = [f"{path}::mul", f"{path}::_halve"]
    observed.add(("opinfo", "mul", "float16"), ["mul.Tensor"], [], [], decomposition)
    observed.add(("opinfo", "mul", "float32"), ["mul.Tensor"], [])
    deps = tmp_path / "deps.json"
    deps.write_text(json.dumps(observed.to_document()), encoding="utf-8")
    head = edit(library, path, "x * 0.5", "x / 2")
    upstream, manifest = library
    state = select_from(upstream, manifest, upstream.base, head, tmp_path, deps=str(deps))
    assert selected(state) == {"test_fake_mul_spyre_float16", "test_fake_mul_spyre_float32"}
    [proxy] = [
        c.evidence
        for c in state.candidates[
            "test/test_ops.py::TestCommonSPYRE::test_fake_mul_spyre_float32"
        ].causes
        if c.stage == "map"
    ]
    assert proxy[-1].startswith("runs where its samples are traced: they dispatch aten::mul")


def test_on_a_device_whose_eager_ops_are_compiled_a_decomposition_reaches_every_test_of_its_op(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    shipped = Path(__file__).parents[2] / "torch_spyre_ref" / "capabilities.yaml"
    compiled = tmp_path / "capabilities.yaml"
    compiled.write_text(shipped.read_text().replace("eager_ops: kernels", "eager_ops: compiled"))
    upstream, manifest = library
    head = upstream.change("torch/_decomp/decompositions.py", "x * 0.5", "x / 2")
    options = SelectOptions(
        from_=upstream.base,
        to=head,
        pytorch_repo=upstream.path,
        manifests=[manifest],
        cache=tmp_path / "cache",
        capabilities=compiled,
    )
    request, _ = prepare(options)
    assert selected(run_pipeline(request)) == {
        f"test_{template}_mul_spyre_{dtype}"
        for template in ("out", "fake")
        for dtype in ("float16", "float32")
    }


def test_a_meta_kernel_reaches_the_op_of_every_overload_it_is_registered_for(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    head = edit(
        library, "torch/_meta_registrations.py", "a.new_empty(a.shape)", "a.new_empty(a.size())"
    )
    state = select(library, head, tmp_path)
    assert selected(state) == {"test_fake_add_spyre_float16", "test_fake_add_spyre_float32"}
    assert any("@register_meta([aten.add.Tensor, aten.add.out])" in s for s in map_evidence(state))


def test_a_python_reference_reaches_its_op_through_the_name_its_factory_infers(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    head = edit(
        library,
        "torch/_refs/__init__.py",
        "torch.where(a < 0, -a, a)",
        "torch.where(a <= 0, -a, a)",
    )
    state = select(library, head, tmp_path)
    # abs is float32-only here (floating_types()); float64 is outside the device's dtypes
    assert selected(state) == {"test_fake_abs_spyre_float32"}
    assert any("aten_op inferred from the name" in s for s in map_evidence(state))


FAKE_IMPLS = """
import torch

aten = torch.ops.aten


def register_op_impl(op):
    def register(fn):
        return fn

    return register


@register_op_impl(aten.add.Tensor)
@register_op_impl(
    aten.mul.Tensor
)
def shared_fake_impl(fake_mode, func, *args):
    return func(*args)
"""


def select_edit(
    library: tuple[UpstreamRepo, Path],
    tmp_path: Path,
    written: tuple[str, str],
    edit: tuple[str, ...],
    deps: str = "none",
) -> PipelineState:
    """Select the edit (`edit`: path, old, new) of a file first written on a new base
    (`written`: path, text); the repository's base is put back afterwards."""
    upstream, manifest = library
    upstream.reset()
    upstream.write(*written)
    base = upstream.commit(f"{written[0]} as the base")
    upstream.edit(*edit)
    head = upstream.commit("the edit")
    return select_from(upstream, manifest, base, head, tmp_path, deps=deps)


def test_the_names_a_star_imported_modules_all_lists_are_what_the_importer_binds(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """`from torch.functional import *` in torch/__init__.py binds what `__all__` lists: a
    name dropped is gone from `torch` when it is imported, for every test. A module nothing
    star-imports lists its exports for readers only."""
    upstream, manifest = library
    upstream.reset()
    upstream.write(
        "torch/functional.py",
        '__all__ = ["einsum", "unique"]\n\ndef einsum(*a):\n    return a\n\ndef unique(a):\n    return a\n',
    )
    upstream.write("torch/_lowrank.py", '__all__ = ["svd_lowrank", "pca_lowrank"]\n')
    checked = '__all__ = ["a", "b"]\nif __all__ != sorted(__all__):\n    raise AssertionError\n'
    upstream.write("torch/_checked.py", checked)
    star = "from torch import nn\nfrom torch.functional import *"
    upstream.edit("torch/__init__.py", "from torch import nn", star)
    base = upstream.commit("a star import")
    for path, old, new, read in (
        ("torch/functional.py", '"einsum", ', "", True),
        ("torch/_lowrank.py", ', "pca_lowrank"', "", False),
        # a module checking its own list's order fails on import when it is reordered
        ("torch/_checked.py", '["a", "b"]', '["b", "a"]', True),
    ):
        upstream.reset()
        upstream.repo.git.checkout("--force", base)
        upstream.edit(path, old, new)
        head = upstream.commit("drop a name")
        state = select_from(upstream, manifest, base, head, tmp_path)
        if read:
            why = "reads the list on import" if "checked" in path else "binds in torch/__init__"
            assert any(why in c.summary for cand in state.candidates.values() for c in cand.causes)
        else:
            assert not state.candidates and state.mapped is not None
            assert any("__all__ only lists" in r for r in state.mapped.no_effect)


def test_module_level_code_of_a_package_import_torch_imports_runs_before_every_test(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """torch/distributions is summarized as one node, and which of its modules
    `import torch` imports in turn is not read: a module-level statement of any of them may
    run on import (`real_vector = independent(real, 1)` raising breaks every test). A
    function body there runs when called: nothing reused reaches the package."""
    upstream, manifest = library
    upstream.reset()
    upstream.write(
        "torch/distributions/__init__.py", "from torch.distributions import constraints\n"
    )
    constraints = "def independent(c, n):\n    return (c, n)\n\nreal_vector = independent(1, 1)\n"
    upstream.write("torch/distributions/constraints.py", constraints)
    package = "from torch import nn\nfrom torch import distributions"
    upstream.edit("torch/__init__.py", "from torch import nn", package)
    base = upstream.commit("a package import torch imports")
    for old, new, at_import in (
        ("independent(1, 1)", "independent(1, -1)", True),
        ("return (c, n)", "return (n, c)", False),
        # an added kernel registered where it is defined: its decorator runs on import
        ("real_vector =", "@register(1)\ndef _kl(p, q):\n    return 0\n\nreal_vector =", True),
        # a plain value calls nothing on import: what reads it is linked as usual
        ("real_vector =", "LIMIT = 2\nreal_vector =", False),
    ):
        upstream.repo.git.checkout("--force", base)
        upstream.edit("torch/distributions/constraints.py", old, new)
        head = upstream.commit("an edit")
        state = select_from(upstream, manifest, base, head, tmp_path)
        causes = [c.summary for cand in state.candidates.values() for c in cand.causes]
        if at_import:
            assert any("module-level code of torch/distributions" in c for c in causes)
        else:
            assert not state.candidates


def test_a_kernel_registered_for_two_ops_does_not_make_one_a_user_of_the_other(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """A FakeTensor kernel registered for add and mul runs whichever op is traced: a change
    to mul's kernel reaches mul's tests, not add's traced ones through the registering
    decorator naming mul (decorator arguments spanning lines included)."""
    state = select_edit(
        library, tmp_path, ("torch/_subclasses/fake_impls.py", FAKE_IMPLS), MUL_KERNEL_EDIT
    )
    assert {name.split("_spyre_")[0] for name in selected(state)} == {
        "test_out_mul",
        "test_fake_mul",
    }


DECOMP_TABLE = """
import torch

aten = torch._ops.ops.aten


def register_decomposition(aten_op):
    def register(fn):
        return fn
    return register


def core_table():
    from torch._decomp.decompositions import exp_decomposition

    return {op: exp_decomposition for op in [aten.exp.default, aten.lerp]}
"""


DECOMP = "torch/_decomp/__init__.py"
TABLE_EDIT = ("[aten.exp.default, ", "[aten.exp.default, aten.mul.Tensor, ")


def test_an_op_added_to_a_list_of_ops_reaches_where_that_op_runs(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """A decomposition table built in a function gains `aten.mul.Tensor`: that reaches the
    tests where mul runs, with the op named, not every user of the table (here none, which
    made it a blind spot covered by a canary)."""
    state = select_edit(library, tmp_path, (DECOMP, DECOMP_TABLE), (DECOMP, *TABLE_EDIT))
    names = selected(state)
    assert names and {name.split("_spyre_")[0] for name in names} <= {
        "test_out_mul",
        "test_fake_mul",
    }
    assert (
        "torch/_decomp/__init__.py:core_table modified: only its lists of ops changed: +aten.mul.Tensor"
        in map_evidence(state)
    )
    assert not state.blind_spots
    detect = {
        c.summary for cand in state.candidates.values() for c in cand.causes if c.stage == "detect"
    }
    assert detect == {
        "torch/_decomp/__init__.py: core_table modified (only its lists of ops: +aten.mul.Tensor)"
    }


def test_a_list_gaining_an_op_the_head_does_not_have_is_an_ordinary_change(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """`aten.nope` raises wherever the list is built: every user of the function breaks,
    not the tests of an op that does not exist."""
    nope = (DECOMP, TABLE_EDIT[0], "[aten.exp.default, aten.nope, ")
    state = select_edit(library, tmp_path, (DECOMP, DECOMP_TABLE), nope)
    assert not any("lists of ops" in step for step in map_evidence(state))
    assert state.blind_spots == [
        "torch/_decomp/__init__.py: core_table modified: linked to no reused test statically"
    ]


def _table_map(tmp_path: Path, ran_table: bool) -> Path:
    """A recorded map: mul's pairs ran aten.mul eagerly and, when `ran_table`, the
    decomposition table only in their compiled paths (where it is built on first use)."""
    observed = ObservedMap(torch_version="9.1.0", device="spyre")
    table = ["torch/_decomp/__init__.py::core_table"] if ran_table else []
    for dtype in ("float16", "float32"):
        observed.add(("opinfo", "mul", dtype), ["mul.Tensor"], [], ["mul.Tensor"], table)
    path = tmp_path / "deps.json"
    path.write_text(json.dumps(observed.to_document()), encoding="utf-8")
    return path


@pytest.mark.parametrize("ran_table", [True, False])
def test_with_a_recording_an_op_list_edit_reaches_only_where_the_list_was_read(
    library: tuple[UpstreamRepo, Path], tmp_path: Path, ran_table: bool
) -> None:
    """Recorded running only where ops are traced, the table's edit reaches mul's traced
    tests, not its eager ones; recorded never running, its lists were never read: it is
    the function's ordinary change (here linked to nothing, so a blind spot)."""
    deps = str(_table_map(tmp_path, ran_table))
    state = select_edit(library, tmp_path, (DECOMP, DECOMP_TABLE), (DECOMP, *TABLE_EDIT), deps)
    linked = {
        c.instance.name
        for c in state.candidates.values()
        if any(x.stage == "map" and x.kind != "canary" for x in c.causes)
    }
    evidence = " ".join(map_evidence(state))
    if ran_table:
        assert linked == {"test_fake_mul_spyre_float16", "test_fake_mul_spyre_float32"}
        assert "changed: +aten.mul.Tensor (recorded running only where ops are traced)" in evidence
        # the fixture's other pairs have no recording: a canary stands for what it misses
        assert state.blind_spots == [
            "torch/_decomp/__init__.py: core_table modified: its lists of ops narrowed to "
            "traced tests by the recording (what the recording does not cover is not linked)"
        ]
    else:  # the ordinary change: no static link, a blind spot a canary covers
        assert "lists of ops" not in evidence
        assert state.blind_spots == [
            "torch/_decomp/__init__.py: core_table modified: linked to no reused test statically"
        ]


def test_an_nn_functional_function_reaches_the_op_that_calls_it_under_another_name(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    head = edit(
        library,
        "torch/nn/functional.py",
        "torch.clamp(input, min_val, max_val)",
        "torch.clamp(input, max_val, min_val)",
    )
    state = select(library, head, tmp_path)
    names = selected(state)
    assert {
        "test_out_nn_functional_relu6_spyre_float16",
        "test_unary_nn_functional_relu6_spyre_float32",
    } <= names
    assert all("relu6" in n for n in names)
    assert any("torch/nn/functional.py:relu6 calls hardtanh" in s for s in map_evidence(state))


def test_code_only_another_device_runs_reaches_nothing_and_says_why(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    fused = edit(
        library,
        "torch/nn/functional.py",
        "def _fused_cuda_silu(input):\n    return input",
        "def _fused_cuda_silu(input):\n    return input * 2",
    )
    state = select(library, fused, tmp_path)
    assert state.candidates == {}
    assert state.mapped is not None
    assert any("_fused_cuda_silu" in n and "another device" in n for n in state.mapped.no_effect)
    nested = edit(
        library,
        f"{INTERNAL}/common_cuda.py",
        "        return function_call()",
        "        return function_call() or True",
    )
    state = select(library, nested, tmp_path)
    assert state.candidates == {}  # `disabled` only runs under `if cond:`, a CUDA condition
    wrapper = edit(
        library,
        f"{INTERNAL}/common_cuda.py",
        "            return f(self, *args, **kwargs)\n        return wrapped",
        "            f(self, *args, **kwargs)\n        return wrapped",
    )
    state = select(library, wrapper, tmp_path)
    assert selected(state) == {"test_fast_math_spyre_float16", "test_fast_math_spyre_float32"}


def test_edits_without_behaviour_select_nothing_and_carry_their_reason(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    upstream = library[0]
    upstream.reset()
    upstream.edit(
        "torch/nn/functional.py",
        '"""Sigmoid-weighted linear unit."""',
        '"""SiLU: x * sigmoid(x)."""',
    )
    upstream.edit(
        "torch/nn/functional.py",
        "def relu(input):",
        "def relu(input: torch.Tensor) -> torch.Tensor:  # typed",
    )
    upstream.edit("torch/version.py", "abc1234", "def5678")
    upstream.edit(
        f"{INTERNAL}/common_utils.py", "import unittest\n", "import unittest  # the runner\n"
    )
    head = upstream.commit("docs, annotations, version, comments")
    state = select(library, head, tmp_path)
    assert state.candidates == {}
    assert state.mapped is not None
    reasons = sorted(state.mapped.no_effect)
    assert reasons == [
        "torch/nn/functional.py modified: no behaviour change (comments, docstrings, annotations, formatting, import order, or a literal spelt another way with the same value)",
        f"{INTERNAL}/common_utils.py modified: no behaviour change (comments, docstrings, annotations, formatting, import order, or a literal spelt another way with the same value)",
        "torch/version.py: git_version modified: version metadata (__version__, git_version)",
    ]


def test_a_cpu_or_meta_decoration_is_another_device_s_for_a_privateuse1_device(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    old = 'DecorateInfo(unittest.expectedFailure, "TestCommon", "test_out", device_type="mps"),'
    head = edit(
        library,
        DB,
        old,
        old
        + '\n            DecorateInfo(unittest.skip("slow"), "TestCommon", "test_out", device_type="cpu"),\n            DecorateInfo(unittest.expectedFailure, "TestCommon", "test_out", device_type="meta"),',
    )
    state = select(library, head, tmp_path)
    assert state.candidates == {}
    assert state.mapped is not None
    assert any("'add'" in n and "other-device" in n for n in state.mapped.no_effect)


def test_a_helper_only_an_unimported_module_uses_reaches_nothing(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    head = edit(library, f"{INTERNAL}/common_utils.py", "return value * 0.5", "return value * 0.25")
    state = select(library, head, tmp_path)
    assert state.candidates == {}
    assert state.mapped is not None
    assert state.mapped.no_effect == [
        f"{INTERNAL}/common_utils.py: shrink_tolerance modified: no reused instance reaches it"
    ]


def test_selection_json_writes_each_evidence_chain_once_and_names_it_from_every_cause(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    from selection.outputs.document import build_document
    from spyre_ci.ci.selection_report import causes_by_test

    head = edit(library, "torch/_decomp/decompositions.py", "x * 0.5", "x / 2")
    doc = build_document(select(library, head, tmp_path), {}, {}, {})
    [chain_id] = doc["evidence"]
    assert doc["evidence"][chain_id][0] == "torch/_decomp/decompositions.py:_halve modified"
    maps = [c for s in doc["selected"] for c in s["causes"] if c["stage"] == "map"]
    assert len(maps) == 2 and {c["evidence_id"] for c in maps} == {chain_id}
    assert {c["basis"] for c in maps} == {"static"}
    failed = doc["selected"][0]["id"]
    [link] = [c for c in causes_by_test(doc, [failed])[failed] if c["stage"] == "map"]
    assert link["evidence"].startswith("torch/_decomp/decompositions.py:_halve modified -> ")


def test_a_backward_formula_links_the_ops_it_calls_under_each_dispatch_key_and_symint_name() -> (
    None
):
    """derivatives.yaml writes `narrow_symint(...)` for the op narrow and may nest formulas
    under `dispatch:` keys: Default's count as calls, a nested tensor's
    (AutogradNestedTensor) do not, since no reused test builds one (as the C++ formula
    index skips them: tests/selection/test_cpp_reader.py)."""
    entries: dict[str, dict[str, Any]] = {
        "cat": {"tensors": "cat_tensors_backward(grad, sizes, dtypes, dim)"},
        "select.int": {
            "dispatch": {
                "Default": {"self": "select_backward_symint(grad, self.sym_sizes(), dim, index)"},
                "AutogradNestedTensor": {"self": "_nested_select_backward(grad, self, dim)"},
            },
        },
        "unbind.int": {"self": "unbind_backward(grads, dim)", "result": "auto_linear"},
    }
    aten_ops = {"cat", "select", "select_backward", "_nested_select_backward", "narrow"}
    found = derivative_uses(entries, aten_ops, "tools/autograd/derivatives.yaml")
    assert sorted(found) == ["select"]
    assert [(t.name, s.how) for t, s in found["select"]] == [
        ("select_backward", "Default.self: calls select_backward in its backward formula"),
    ]


BUILDING_FACTORY = '''


def _make_traced(op):
    """Builds `op`'s decomposition and registers it under the op it computes."""
    name = op.__name__

    def _fn(a, b):
        return op(a, b)

    register_decomposition(getattr(aten, name))(_fn)
    return _fn


aten = torch.ops.aten
mul = _make_traced(aten.mul)
'''


def test_what_a_factory_builds_and_registers_under_a_computed_op_reaches_that_op(
    library: tuple[UpstreamRepo, Path], tmp_path: Path
) -> None:
    """`alias_copy = _make_copy_from_view(aten.alias)`, `abs_ = _make_inplace(abs)`: the
    factory registers what it builds under an op it computes (`getattr(aten, name)`), which
    upstream names what it builds after; an edit of the built function's code reaches the
    tests that trace that op."""
    upstream = library[0]
    upstream.reset()
    where = "    return torch.where(a < 0, -a, a)\n"
    upstream.edit("torch/_refs/__init__.py", where, where + BUILDING_FACTORY)
    base = upstream.commit("a factory building mul's decomposition")
    upstream.edit("torch/_refs/__init__.py", "return op(a, b)", "return op(b, a)")
    head = upstream.commit("the built decomposition swaps its arguments")
    state = select_from(upstream, library[1], base, head, tmp_path)
    assert {c.instance.op for c in state.candidates.values()} == {"mul"}
    assert any(
        "mul = _make_traced(aten.mul) (aten_op inferred from the name)" in s
        for s in map_evidence(state)
    )
