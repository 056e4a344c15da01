"""The pure resolution: dtypes, op scope, mode precedence, force_xfail, tolerance, provenance."""

from __future__ import annotations

from typing import Any

import pytest

from test_manifests import (
    Mode,
    Resolution,
    TestInstance,
    is_reused,
    manifest_from_text,
    resolve,
    reused_files,
    template_scope,
)

FILE = "test/test_x.py"

MANIFEST = manifest_from_text(
    """\
test_suite_config:
  labels: [core]
  files:
    - path: ${TORCH_ROOT}/test/test_x.py
      unlisted_test_mode: xfail
      reason: unlisted tests are not triaged yet
      tests:
        - names: [TestX::test_listed]
        - names: [TestX::test_strict]
          mode: xfail_strict
          reason: known bad
        - names: [TestX::test_skipped]
          mode: skip
          reason: crashes
        - names: [TestX::test_edits]
          labels: [smoke]
          tags: [model__granite]
          edits:
            ops:
              include: [{name: gcd}]
              exclude: [{name: mul}]
            dtypes:
              include: [{name: complex64}, {name: int64, precision: {atol: 0.5}}, {name: bfloat16}]
              exclude: [{name: bfloat16}]
        - names: ["TestX::test_re.*"]
          mode: mandatory_success
  global:
    supported_dtypes:
      - {name: float16, precision: {atol: 0.01, rtol: 0.02}}
      - {name: bfloat16}
      - {name: float32, force_xfail: true, reason: fp32 emulated}
    supported_ops:
      - add
      - mul
      - {name: div, dtypes: [{name: float16, precision: {atol: 0.1, rtol: 0.1}}]}
      - {name: abs, force_xfail: true, reason: abs adapter}
""",
    "m.yaml",
)


def r(template: str, op: str | None = None, dtype: str | None = None, **kw: Any) -> Resolution:
    return resolve(MANIFEST, TestInstance(FILE, "TestX", template, op=op, dtype=dtype, **kw))


def test_effective_dtypes_intersect_then_include_then_exclude() -> None:
    # global ∩ op: div only float16; add: the whole ceiling.
    assert r("test_listed", "div", "float16").runs
    assert not r("test_listed", "div", "float32").runs
    assert r("test_listed", "add", "float32").runs
    assert r("test_listed", "add", "float16").dtypes == {"float16", "bfloat16", "float32"}
    # upstream-allowed narrows too
    assert not r("test_listed", "add", "float16", upstream_dtypes=frozenset({"float32"})).runs
    # include adds dtypes outside the ceiling (even complex); exclude is applied last
    assert r("test_edits", "add", "int64").runs
    assert r("test_edits", "add", "complex64").runs
    assert not r("test_edits", "add", "bfloat16").runs
    assert r("test_edits", "add", "float16").dtypes == {"float16", "float32", "complex64", "int64"}


def test_complex_is_out_unless_included_even_without_a_ceiling() -> None:
    open_manifest = manifest_from_text(
        "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_x.py\n      tests:\n        - names: [TestX::a]\n        - names: [TestX::b]\n          edits: {dtypes: {include: [{name: complex64}]}}\n"
    )
    assert resolve(open_manifest, TestInstance(FILE, "TestX", "a", dtype="float64")).runs
    assert not resolve(open_manifest, TestInstance(FILE, "TestX", "a", dtype="complex64")).runs
    assert resolve(open_manifest, TestInstance(FILE, "TestX", "b", dtype="complex64")).runs


def test_op_scope_exclude_over_include_over_global() -> None:
    assert not r("test_edits", "mul", "float16").runs  # excluded for this test only
    assert r("test_listed", "mul", "float16").runs
    assert r("test_edits", "gcd", "float16").runs  # included although not supported globally
    assert not r("test_listed", "gcd", "float16").runs
    assert r(
        "test_listed", "div", "float16", op_variant="floor_rounding"
    ).runs  # `div` names all variants


def test_mode_precedence_and_force_xfail() -> None:
    assert r("test_listed", "add", "float16").mode is Mode.MANDATORY_SUCCESS  # listed, no mode
    assert r("test_strict", "add", "float16").mode is Mode.XFAIL_STRICT  # explicit
    assert r("test_unlisted", "add", "float16").mode is Mode.XFAIL  # unlisted_test_mode
    skipped = r("test_skipped", "add", "float16")
    assert skipped.mode is Mode.SKIP and not skipped.reused and not skipped.runs
    assert skipped.reason == "crashes"
    # force_xfail (op or dtype) turns only mandatory_success into xfail
    assert r("test_listed", "abs", "float16").mode is Mode.XFAIL
    assert r("test_listed", "add", "float32").mode is Mode.XFAIL
    assert r("test_listed", "add", "float32").reason == "fp32 emulated"
    assert r("test_strict", "abs", "float16").mode is Mode.XFAIL_STRICT


def test_regex_names_match_in_full_never_as_prefix() -> None:
    assert r("test_regex_one").mode is Mode.MANDATORY_SUCCESS
    assert r("test_listed_more").mode is Mode.XFAIL  # `test_listed` is not a prefix match


def test_tolerance_precedence() -> None:
    assert (
        r("test_edits", "add", "int64").tolerance.atol,
        r("test_edits", "add", "int64").tolerance.rtol,
    ) == (0.5, 1e-3)
    div = r("test_listed", "div", "float16")
    assert (div.tolerance.atol, div.tolerance.rtol) == (0.1, 0.1)
    assert div.tolerance_overrides_upstream
    add = r("test_listed", "add", "float16")
    assert (add.tolerance.atol, add.tolerance.rtol) == (0.01, 0.02)
    assert not add.tolerance_overrides_upstream  # the global dtype precision only loosens
    assert r("test_listed", "add", "bfloat16").tolerance.atol == 1e-3  # the default


def test_every_decision_names_its_rule_and_line() -> None:
    res = r("test_listed", "abs", "float16")
    assert str(res.decisions["mode"]) == "xfail  <- global.supported_ops[].force_xfail (m.yaml:36)"
    assert res.decisions["op"].line == 36
    assert res.decisions["dtype"].rule == "global.supported_dtypes"
    assert res.decisions["entry"].line == 8
    assert res.decisions["tolerance"].line == 29
    edits = r("test_edits", "add", "bfloat16")
    assert str(edits.decisions["dtype"]) == "bfloat16 out  <- edits.dtypes.exclude (m.yaml:24)"


def test_marks_and_labels() -> None:
    res = r("test_edits", "gcd", "float16")
    assert res.marks == ("model__granite", "op__gcd", "dtype__float16")
    assert res.labels == ("core", "smoke")
    assert r("test_listed", "add", "torch.half").marks == ("op__add", "dtype__float16")


def test_files_not_named_are_not_reused() -> None:
    other = resolve(MANIFEST, TestInstance("test/test_y.py", "TestX", "test_listed"))
    assert not other.reused
    assert "no files[] entry" in other.decisions["mode"].rule
    assert resolve(
        MANIFEST, TestInstance("/src/pytorch/test/test_x.py", "TestX", "test_listed")
    ).runs


def test_scope_helpers_answer_without_torch() -> None:
    assert reused_files([MANIFEST]) == ["test/test_x.py"]
    assert is_reused(
        [MANIFEST], TestInstance(FILE, "TestX", "test_listed", op="add", dtype="float16")
    )
    assert not is_reused(
        [MANIFEST], TestInstance(FILE, "TestX", "test_skipped", op="add", dtype="float16")
    )
    scope = template_scope(MANIFEST, FILE, "TestX", "test_edits")
    assert (
        scope.reused and scope.ops == {"add", "div", "abs", "gcd"} and scope.excluded_ops == {"mul"}
    )
    assert scope.dtypes == {"float16", "bfloat16", "float32", "complex64", "int64"}
    assert scope.allows("gcd", "int64") and not scope.allows("mul", "float16")
    assert not template_scope(MANIFEST, FILE, "TestX", "test_skipped").reused
    assert template_scope(MANIFEST, FILE, "TestX", "test_listed").modes == {
        Mode.MANDATORY_SUCCESS,
        Mode.XFAIL,
    }


@pytest.mark.parametrize("bad", ["float128", "torch.complex256"])
def test_unknown_dtypes_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown dtype"):
        TestInstance(FILE, "TestX", "t", dtype=bad)
