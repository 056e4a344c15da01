"""Merging manifests: same path combined, global lists unioned, conflicts reported."""

from __future__ import annotations

import pytest

from test_manifests import ManifestError, Mode, TestInstance, manifest_from_text, resolve
from test_manifests.merge import merge_manifests

A = manifest_from_text(
    """\
test_suite_config:
  labels: [core]
  files:
    - path: ${TORCH_ROOT}/test/test_x.py
      unlisted_test_mode: skip
      tests:
        - names: [TestX::test_a]
  global:
    supported_dtypes: [float16]
    supported_ops: [add]
""",
    "a.yaml",
)
B = manifest_from_text(
    """\
test_suite_config:
  labels: [smoke]
  files:
    - path: ${TORCH_ROOT}/test/test_x.py
      tests:
        - names: [TestX::test_b]
          mode: xfail
          reason: flaky
    - path: ${TORCH_ROOT}/test/test_y.py
  global:
    supported_dtypes: [float16, bfloat16]
    supported_ops: [add, mul]
""",
    "b.yaml",
)


def test_same_path_combined_and_global_lists_unioned() -> None:
    merged = merge_manifests([A, B])
    assert [f.path for f in merged.suite.files] == [
        "${TORCH_ROOT}/test/test_x.py",
        "${TORCH_ROOT}/test/test_y.py",
    ]
    assert [t.names for t in merged.suite.files[0].tests] == [["TestX::test_a"], ["TestX::test_b"]]
    assert [d.name for d in merged.suite.global_.supported_dtypes] == ["float16", "bfloat16"]
    assert [o.name for o in merged.suite.global_.supported_ops or []] == ["add", "mul"]
    b = resolve(
        merged, TestInstance("test/test_x.py", "TestX", "test_b", op="mul", dtype="bfloat16")
    )
    assert b.mode is Mode.XFAIL
    # provenance survives the merge: the rule is in b.yaml at its own line
    assert (b.decisions["mode"].file, b.decisions["mode"].line) == ("b.yaml", 7)
    assert b.labels == ("core", "smoke")  # each file keeps its manifest's suite labels
    a = resolve(merged, TestInstance("test/test_x.py", "TestX", "test_a"))
    assert a.mode is Mode.MANDATORY_SUCCESS and a.decisions["entry"].file == "a.yaml"


def test_conflicting_scalars_and_entries_are_errors() -> None:
    c = manifest_from_text(
        """\
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_x.py
      unlisted_test_mode: xfail
  global:
    supported_dtypes: [{name: float16, force_xfail: true}]
""",
        "c.yaml",
    )
    with pytest.raises(ManifestError) as caught:
        merge_manifests([A, c])
    text = str(caught.value)
    assert (
        "c.yaml:4:7: test_suite_config.files[0].unlisted_test_mode: conflicting unlisted_test_mode"
        in text
    )
    assert "(first set at a.yaml:5)" in text
    assert (
        "c.yaml:6:24: test_suite_config.global.supported_dtypes[0]: conflicting supported_dtypes entry 'float16'"
        in text
    )
