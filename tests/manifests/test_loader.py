"""Loading manifests: torch-spyre's format loads unchanged; every error names file, line, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_manifests import ManifestError, Mode, load_manifest, load_manifests, manifest_from_text

# A config in torch-spyre's format, using its shorthand forms (plain op/module names, glob
# test names, `1e-3` strings that YAML 1.1 reads as text, per-file labels, no_grad, cpu_move).
TORCH_SPYRE_CONFIG = """\
### torch-spyre style config ###
test_suite_config:
  labels: [regression, trunk]
  files:
    - path: ${TORCH_ROOT}/test/test_binary_ufuncs.py
      unlisted_test_mode: xfail
      tests:
        - names:
            - TestBinaryUfuncs::test_scalar_support
            - TestBinaryUfuncs::test_contig_vs_transposed
          mode: mandatory_success
          tags: [model_1, model__granite]
          labels: [smoke]
          no_grad: true
          edits:
            ops:
              include:
                - name: gcd
                  description: "no ref, so binary_ufuncs_with_references drops it"
              exclude:
                - name: sub
            dtypes:
              include:
                - name: int64
                  precision: {atol: 1e-3, rtol: 1e-3}
              exclude:
                - name: bfloat16
            functions:
              cpu_move:
                - name: assertEqual
                - name: assertTrue
    - path: ${TORCH_ROOT}/test/test_modules.py
      unlisted_test_mode: skip
      labels: [integration]
      tests:
        - names: ["*TestModule*::test_forward"]
          mode: xfail
          tags: [model__bert]
          edits:
            modules:
              include:
                - name: torch.nn.BatchNorm2d
                  description: "add batchnorm even though not in global.supported_modules"
              exclude:
                - name: torch.nn.Linear
    - path: ${TORCH_DEVICE_ROOT}/tests/inductor/test_*.py
      unlisted_test_mode: mandatory_success
  global:
    devices: [cpu, spyre]
    supported_dtypes:
      - name: float16
      - name: int64
      - name: float32
        force_xfail: true
    supported_ops:
      - add
      - name: mul
        force_xfail: true
      - name: add_relu
        dtypes:
          - name: float16
            precision:
              atol: 1e-3
              rtol: 1e-3
    supported_modules:
      - torch.nn.Linear
      - name: torch.nn.LayerNorm
        dtypes: [{name: float16}]
    input_config:
      seed: 42
"""


def test_a_torch_spyre_config_loads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(TORCH_SPYRE_CONFIG)
    manifest = load_manifest(path)
    suite = manifest.suite
    assert suite.labels == ["regression", "trunk"]
    assert [f.unlisted_test_mode for f in suite.files] == [
        Mode.XFAIL,
        Mode.SKIP,
        Mode.MANDATORY_SUCCESS,
    ]
    test = suite.files[0].tests[0]
    assert test.mode_is_explicit and test.no_grad and test.tags == ["model_1", "model__granite"]
    assert [i.name for i in test.edits.ops.include] == ["gcd"]
    assert test.edits.dtypes.include[0].precision is not None
    assert test.edits.dtypes.include[0].precision.atol == pytest.approx(1e-3)
    assert [f.name for f in test.edits.functions.cpu_move] == ["assertEqual", "assertTrue"]
    assert [op.name for op in suite.global_.supported_ops or []] == ["add", "mul", "add_relu"]
    assert suite.global_.supported_ops is not None and suite.global_.supported_ops[1].force_xfail
    assert suite.global_.input_config.seed == 42
    assert manifest.position(("files", 1, "tests", 0, "names")).line == 36


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "test_suite_config:\n  files:\n    - path: x.py\n      tests:\n        - names: [A::b]\n          mdoe: xfail\n",
            "m.yaml:6:11: test_suite_config.files[0].tests[0].mdoe: unknown key 'mdoe'",
        ),
        (
            "test_suite_config:\n  files:\n    - path: x.py\n      unlisted_test_mode: maybe\n",
            "m.yaml:4:7: test_suite_config.files[0].unlisted_test_mode: Input should be",
        ),
        (
            "test_suite_config:\n  files:\n    - path: x.py\n      tests:\n        - names: [A::b]\n          no_grad: sometimes\n",
            "m.yaml:6:11: test_suite_config.files[0].tests[0].no_grad: Input should be a valid boolean",
        ),
        (
            "test_suite_config:\n  files: []\n  global:\n    supported_dtypes: [float16, float128]\n",
            "m.yaml:4:33: test_suite_config.global.supported_dtypes[1].name: Value error, unknown dtype 'float128'",
        ),
        (
            "test_suite_config:\n  files:\n    - path: ${PYTORCH}/test/x.py\n",
            "m.yaml:3:7: test_suite_config.files[0].path: Value error, unknown path token ${PYTORCH}",
        ),
        (
            "test_suite_config:\n  files:\n    - tests: []\n",
            "m.yaml:3:7: test_suite_config.files[0].path: missing required field 'path'",
        ),
        ("test_suite_config:\n  files: [\n", "m.yaml:3:1: malformed YAML"),
        (
            "test_suite_config:\n  files: []\n  files: []\n",
            "m.yaml:3:3: test_suite_config.files: duplicate key",
        ),
        (
            "test_suite_config:\n  files:\n    - path: x.py\n      tests:\n        - names: [A::b::c]\n",
            "m.yaml:5:11: test_suite_config.files[0].tests[0].names: Value error, invalid test name 'A::b::c'",
        ),
    ],
)
def test_errors_name_file_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(ManifestError) as caught:
        manifest_from_text(text, "m.yaml")
    assert str(caught.value).startswith(expected), str(caught.value)


def test_load_manifests_reports_every_bad_file(tmp_path: Path) -> None:
    good, bad1, bad2 = tmp_path / "good.yaml", tmp_path / "bad1.yaml", tmp_path / "bad2.yaml"
    good.write_text("test_suite_config:\n  files: []\n")
    bad1.write_text("test_suite_config:\n  filez: []\n")
    bad2.write_text("just text\n")
    with pytest.raises(ManifestError) as caught:
        load_manifests([good, bad1, bad2, tmp_path / "missing.yaml"])
    files = [issue.file for issue in caught.value.issues]
    assert str(bad1) in files and str(bad2) in files and str(tmp_path / "missing.yaml") in files
    assert str(good) not in files
