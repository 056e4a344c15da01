"""Stage by stage over real git commits of an upstream-shaped repository:
what is detected, mapped, scoped and decided."""

from __future__ import annotations

from pathlib import Path

import pytest

from selection.errors import BadInput
from selection.pipeline import SelectOptions, prepare, run_pipeline
from tests.selection.conftest import Select, counts, ids
from tests.support.upstream_repo import INTERNAL, UpstreamRepo

DB = f"{INTERNAL}/common_methods_invocations.py"
DEVICE = f"{INTERNAL}/common_device_type.py"
UTILS = f"{INTERNAL}/common_utils.py"
NATIVE = "torchgen/packaged/ATen/native/native_functions.yaml"
ADD_SKIPS = 'DecorateInfo(unittest.expectedFailure, "TestCommon", "test_out", device_type="mps"),'


def change_mul_samples(upstream: UpstreamRepo) -> str:
    """Commit a changed tensor size in `sample_inputs_mul`; return the new head."""
    return upstream.change(DB, "torch.ones(4, device=device", "torch.ones(6, device=device")


def add_decorator(upstream: UpstreamRepo, decorator: str) -> str:
    """Commit `decorator` into the skips of the OpInfo 'add'; return the new head."""
    return upstream.change(DB, ADD_SKIPS, f"{ADD_SKIPS}\n            {decorator},")


def test_skip_aimed_at_another_device_is_detected_and_affects_nothing(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = add_decorator(
        upstream,
        'DecorateInfo(unittest.skip("flaky"), "TestCommon", "test_out", device_type="cuda")',
    )
    state = select(head)
    assert counts(state, "detect")["database_entries"] == 1
    assert counts(state, "detect")["database_entries_other_device_only"] == 1
    assert counts(state, "map")["affected_instances"] == 0
    assert state.candidates == {}
    assert any("'add'" in n and "other-device" in n for n in state.mapped.no_effect)  # type: ignore[union-attr]


def test_device_agnostic_decorator_selects_exactly_the_instance_it_names(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = add_decorator(
        upstream,
        'DecorateInfo(unittest.expectedFailure, "TestCommon", "test_out", dtypes=(torch.float16,))',
    )
    state = select(head)
    change = state.changes.entries[0]  # type: ignore[union-attr]
    assert (change.name, change.other_device_only) == ("add", False)
    assert [(f.test_class, f.test_name, f.dtypes) for f in change.fields] == [
        ("TestCommon", "test_out", ("float16",))
    ]
    assert ids(state) == {"test_out_add_spyre_float16"}


def test_an_unconditional_upstream_skip_drops_the_instance_with_its_reason(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = add_decorator(
        upstream,
        'DecorateInfo(unittest.skip("wrong"), "TestCommon", "test_out", dtypes=(torch.float16,))',
    )
    state = select(head)
    assert counts(state, "map")["affected_instances"] == 1
    assert state.candidates == {}
    [dropped] = state.dropped
    assert dropped.node_id.endswith("::test_out_add_spyre_float16")
    assert dropped.reason.startswith("upstream skips it: DecorateInfo(unittest.skip('wrong')")
    assert state.reused_total == 11  # no longer part of what run-all would run


def test_a_dtype_list_change_maps_only_the_added_dtypes(
    upstream: UpstreamRepo, select: Select
) -> None:
    widened = upstream.change(
        DB,
        "dtypes=floating_types_and(torch.float16),\n        sample_inputs_func=sample_inputs_mul",
        "dtypes=all_types_and(torch.float16),\n        sample_inputs_func=sample_inputs_mul",
    )
    state = select(widened)
    [change] = state.changes.entries  # type: ignore[union-attr]
    assert [f.detail for f in change.fields] == ["dtypes +int32 +int64"]
    mapped = {c.instance.name for c in state.mapped.candidates.values()}  # type: ignore[union-attr]
    assert mapped == {
        "test_out_mul_spyre_int32",
        "test_out_mul_spyre_int64",
        "test_skipped_by_manifest_mul_spyre_int32",
        "test_skipped_by_manifest_mul_spyre_int64",
    }
    assert state.candidates == {}  # the device's manifests run no integer dtypes
    narrowed = upstream.change(
        DB,
        "dtypes=floating_types_and(torch.float16),\n        sample_inputs_func=sample_inputs_mul",
        "dtypes=floating_types(),\n        sample_inputs_func=sample_inputs_mul",
    )
    state = select(narrowed)
    assert counts(state, "map")["affected_instances"] == 0
    assert any("dtypes -float16" in n and "names no instance" in n for n in state.mapped.no_effect)  # type: ignore[union-attr]


def test_sample_function_change_maps_to_every_instance_of_that_op_then_scope_drops_float64(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = change_mul_samples(upstream)
    state = select(head)
    assert [c.qualname for c in state.changes.symbols] == ["sample_inputs_mul"]  # type: ignore[union-attr]
    mapped = {c.instance.name for c in state.mapped.candidates.values()}  # type: ignore[union-attr]
    assert {"test_out_mul_spyre_float64", "test_skipped_by_manifest_mul_spyre_float16"} <= mapped
    assert ids(state) == {"test_out_mul_spyre_float16", "test_out_mul_spyre_float32"}
    reasons = {d.node_id.rsplit("::", 1)[-1]: d.reason for d in state.dropped}
    assert "filtered out" in reasons["test_out_mul_spyre_float64"]
    assert "not for this device" in reasons["test_skipped_by_manifest_mul_spyre_float16"]
    chain = [c.stage for c in next(iter(state.candidates.values())).causes]
    assert chain == ["detect", "map", "scope", "triage"]


def test_docstring_and_formatting_edits_are_not_changes(
    upstream: UpstreamRepo, select: Select
) -> None:
    upstream.reset()
    upstream.edit(
        DB, '    """Unary samples."""\n', '    """Samples for unary ufuncs, reworded."""\n\n'
    )
    upstream.edit(
        DB,
        "def sample_inputs_add(op_info, device, dtype):",
        "def sample_inputs_add(op_info,\n                      device, dtype):  # reflowed",
    )
    head = upstream.commit("docs and formatting")
    state = select(head)
    assert counts(state, "detect")["files"] == 1
    assert counts(state, "detect")["symbols"] == 0
    assert state.candidates == {}


def test_change_inside_a_cuda_only_branch_affects_nothing(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(
        DEVICE,
        "torch.cuda.synchronize()",
        "torch.cuda.synchronize()\n            torch.cuda.empty_cache()",
    )
    state = select(head)
    [symbol] = state.changes.symbols  # type: ignore[union-attr]
    assert (symbol.qualname, symbol.other_device_only) == (
        "DeviceTypeTestBase.instantiate_test",
        True,
    )
    assert state.candidates == {}
    assert state.mapped.canary_causes == []  # type: ignore[union-attr]


def test_other_device_decorator_change_affects_nothing(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(
        DEVICE,
        "def skipMPS(fn):\n    return fn",
        "def skipMPS(fn):\n    fn.skip_mps = True\n    return fn",
    )
    state = select(head)
    # Not by its name (a name is not a device): its only use, `DecorateInfo(skipMPS)`,
    # is an MPS decorator's, which never applies to spyre's test class.
    assert state.changes is not None
    symbols = [(s.qualname, s.other_device_only) for s in state.changes.symbols]
    assert symbols == [("skipMPS", False)]
    assert state.candidates == {}
    assert state.mapped is not None
    assert state.mapped.no_effect == [f"{DEVICE}: skipMPS modified: no reused instance reaches it"]


_MACHINERY_OLD = 'setattr(cls, name + "_" + cls.device_type, test)'
_MACHINERY_NEW = 'setattr(cls, f"{name}_{cls.device_type}", test)'


def test_instantiation_machinery_change_selects_a_stratified_canary(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(DEVICE, _MACHINERY_OLD, _MACHINERY_NEW)
    state = select(head)
    assert counts(state, "map")["canary_causes"] == 1
    reused = state.reused
    strata = {(i.template, i.dtype) for i in reused}
    pairs = {(i.op, i.dtype) for i in reused if i.op is not None}
    selected = [c.instance for c in state.candidates.values()]
    assert {(i.template, i.dtype) for i in selected} == strata  # every template per dtype
    assert {(i.op, i.dtype) for i in selected if i.op is not None} == pairs  # every op too
    # one per template stratum (6), and one for each of the 3 pairs those leave out
    assert (len(strata), len(selected)) == (6, 9) and len(selected) < state.reused_total
    assert all(any(c.kind == "canary" for c in cand.causes) for cand in state.candidates.values())


def test_full_widening_selects_every_reused_instance(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(DEVICE, _MACHINERY_OLD, _MACHINERY_NEW)
    state = select(head, widen="full")
    assert len(state.candidates) == state.reused_total == 12


def test_helper_change_reaches_the_templates_that_use_it(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(UTILS, "return torch.zeros(shape", "return torch.ones(shape")
    state = select(head)
    assert ids(state) == {"test_plain_spyre_float16", "test_plain_spyre_float32"}
    assert counts(state, "map")["canary_causes"] == 0


def test_template_body_change_selects_its_instances_and_keeps_xfail(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(
        "test/test_ops.py",
        "self.assertClose(op.op(sample.input), op.op(sample.input))",
        "self.assertClose(op.op(sample.input), op.ref(sample.input))",
    )
    state = select(head)
    assert [t.qualname for t in state.changes.templates] == ["TestCommon.test_unary"]  # type: ignore[union-attr]
    assert ids(state) == {
        "test_unary_abs_spyre_float32",
        "test_unary_exp_spyre_float16",
        "test_unary_exp_spyre_float32",
    }
    assert {c.mode for c in state.candidates.values()} == {"xfail"}


def test_template_only_for_another_device_drops_out_upstream(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(
        "test/test_ops.py",
        "    def test_streams(self, device):\n        pass",
        "    def test_streams(self, device):\n        return None",
    )
    state = select(head)
    assert state.candidates == {}
    assert [d.reason for d in state.dropped] == ["upstream @onlyCUDA skips it on this device"]


def test_native_functions_other_device_dispatch_affects_nothing_shared_dispatch_selects(
    upstream: UpstreamRepo, select: Select
) -> None:
    mps_only = upstream.change(NATIVE, "MPS: add_mps", "MPS: add_mps_v2")
    state = select(mps_only)
    assert [(n.op, n.other_device_only) for n in state.changes.native] == [("add.Tensor", True)]  # type: ignore[union-attr]
    assert state.candidates == {}
    shared = upstream.change(
        NATIVE, "CompositeExplicitAutograd: mul", "CompositeExplicitAutograd: mul_v2"
    )
    state = select(shared)
    assert ids(state) == {"test_out_mul_spyre_float16", "test_out_mul_spyre_float32"}


def test_unparseable_file_widens_its_dependents_and_is_reported(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(DB, "unary_ufuncs = [", "unary_ufuncs = [[")
    state = select(head)
    assert counts(state, "detect")["unparseable_files"] == 1
    assert any(DB in spot and "could not be analysed" in spot for spot in state.blind_spots)
    assert len(state.candidates) == state.reused_total > 0


def test_a_file_nested_too_deeply_to_parse_widens_its_dependents_too(
    upstream: UpstreamRepo, select: Select
) -> None:
    """Valid syntax the AST constructor cannot build (RecursionError): reported the same
    way, not a traceback."""
    deep = "_deep = " + "-" * 5000 + "1\n"
    head = upstream.change(DB, "unary_ufuncs = [", deep + "unary_ufuncs = [")
    state = select(head)
    assert counts(state, "detect")["unparseable_files"] == 1
    assert any(DB in spot and "RecursionError" in spot for spot in state.blind_spots)
    assert len(state.candidates) == state.reused_total > 0


def test_disabled_scope_keeps_what_the_manifest_would_drop(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = change_mul_samples(upstream)
    state = select(head, disabled=["scope"])
    scope = next(r for r in state.reports if r.name == "scope")
    assert scope.enabled is False
    assert "test_out_mul_spyre_float64" in ids(state)


def test_unknown_stage_name_is_bad_input(upstream: UpstreamRepo, select: Select) -> None:
    head = change_mul_samples(upstream)
    with pytest.raises(BadInput, match="unknown stage 'mapp'"):
        select(head, disabled=["mapp"])


def test_triage_decides_per_root_cause_and_ranks_mandatory_and_float16_first(
    upstream: UpstreamRepo, select: Select
) -> None:
    head = upstream.change(
        DB,
        "yield SampleInput(torch.ones(5, device=device",
        "yield SampleInput(torch.ones(7, device=device",
    )
    state = select(head)
    [group] = state.groups
    assert group.verdict is not None
    assert (group.verdict.decision, group.verdict.agent) == ("run", "deterministic")
    assert group.verdict.rationale.startswith("a helper these tests run changed")
    assert "sample_inputs_unary modified" in group.cause.summary
    ranked = [(c.mode, c.instance.dtype) for c in state.candidates.values()]
    assert ranked == [
        ("mandatory_success", "float16"),
        ("mandatory_success", "float32"),
        ("mandatory_success", "float32"),
        ("xfail", "float16"),
        ("xfail", "float32"),
        ("xfail", "float32"),
    ]
    assert counts(state, "triage")["run"] == counts(state, "triage")["selected"] == 6


def test_an_expected_failure_removed_upstream_asks_for_a_manifest_change_and_runs(
    upstream: UpstreamRepo, select: Select
) -> None:
    xfail = 'DecorateInfo(unittest.expectedFailure, "TestCommon", "test_unary", dtypes=(torch.float16,))'
    with_xfail = upstream.change(
        DB, "skips=(DecorateInfo(skipMPS),),", f"skips=(DecorateInfo(skipMPS), {xfail}),"
    )
    upstream.edit(DB, f"skips=(DecorateInfo(skipMPS), {xfail}),", "skips=(DecorateInfo(skipMPS),),")
    fixed = upstream.commit("exp float16 passes test_unary now")
    state = select(fixed, base=with_xfail)
    assert ids(state) == {"test_unary_exp_spyre_float16"}
    [group] = state.groups
    assert group.verdict is not None and group.verdict.decision == "manifest_change"
    assert "xfail" in group.verdict.rationale
    assert counts(state, "triage")["manifest_change"] == counts(state, "triage")["selected"] == 1
    findings = state.manifest_findings
    assert isinstance(findings, list) and len(findings) == 1
    finding = str(findings[0])
    assert "OpInfo 'exp' modified" in finding and "make them mandatory_success" in finding


def test_a_dropped_instance_carries_the_reason_the_manifest_resolution_gives(
    upstream: UpstreamRepo, tmp_path: Path
) -> None:
    # test_out has an xfail entry with a reason; mul and float64 are outside the device's
    # support: the drop says so (as `spyre-ci manifest explain`), not the xfail's reason
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_ops.py\n"
        "      tests:\n        - names: [TestCommon::test_out]\n          mode: xfail\n"
        "          reason: out= into a tensor of the wrong layout\n"
        "  global:\n    supported_dtypes: [float16, float32]\n    supported_ops: [add]\n"
    )
    head = change_mul_samples(upstream)
    request, _ = prepare(
        SelectOptions(
            from_=upstream.base, to=head, pytorch_repo=upstream.path, manifests=[manifest]
        )
    )
    state = run_pipeline(request)
    reasons = {d.node_id.rsplit("::", 1)[-1]: d.reason for d in state.dropped}
    assert reasons["test_out_mul_spyre_float16"] == (
        "manifest: op mul out <- not in global.supported_ops "
        "(listed, but its op/module/dtype is filtered out)"
    )
    assert reasons["test_out_mul_spyre_float64"].startswith("manifest: op mul out <- not in")
    assert not any("wrong layout" in r for r in reasons.values())


def test_a_path_a_release_cannot_hold_says_the_wheel_ships_no_such_source() -> None:
    """A C++ hunk onto a release is not a misspelt path: the reason says what a wheel lacks
    and where it can be read; onto a clone, the tree simply lacks the file."""
    from selection.stages.detect import _unanalysed_reason

    cpp = _unanalysed_reason("aten/src/ATen/native/BinaryOps.cpp", "2.13.0", release=True)
    assert "release 2.13.0" in cpp and "no C++" in cpp and "--pytorch-repo" in cpp
    test = _unanalysed_reason("test/test_ops.py", "2.13.0", release=True)
    assert "test/ tree was not fetched, or could not be" in test
    clone = _unanalysed_reason("aten/x.cpp", "abc123", release=False)
    assert clone == "the diff changes it, but the base tree (abc123) has no such file"
