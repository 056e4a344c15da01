"""`spyre-ci manifest …` commands, in-process through click."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from spyre_ci.cli import cli
from test_manifests.cli import schema_document

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "test_manifests" / "schema.json"


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def write_one_file(tmp_path: Path, name: str, path: str, more: str = "") -> Path:
    """Write a manifest whose one file entry is `path` (on line 3); `more` follows as written:
    further keys of that entry or of test_suite_config."""
    return write(tmp_path, name, f"test_suite_config:\n  files:\n    - path: {path}\n{more}")


def test_a_file_that_cannot_be_read_is_named_without_a_false_location(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    code, _, err = invoke("manifest", "validate", str(missing))
    assert code == 2
    assert err.splitlines() == [f"{missing}: cannot read: No such file or directory"]


@pytest.mark.parametrize("command", [("validate",), ("lint", "--no-opinfo"), ("merge",)])
def test_every_manifest_command_exits_2_on_a_bad_manifest(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    bad = write_one_file(tmp_path, "bad.yaml", "a.py", "      tset: []\n")
    code, _, err = invoke("manifest", command[0], str(bad), *command[1:])
    assert code == 2, err
    assert err.splitlines() == [f"{bad}:4:7: test_suite_config.files[0].tset: unknown key 'tset'"]


def test_explain_exits_2_on_a_bad_manifest(tmp_path: Path) -> None:
    bad = write_one_file(tmp_path, "bad.yaml", "a.py", "      tset: []\n")
    test_id = "test/test_ops.py::TestCommonSPYRE::test_out_add_spyre_float32"
    code, _, err = invoke("manifest", "explain", test_id, "--manifest", str(bad))
    assert code == 2
    assert f"{bad}:4:7: test_suite_config.files[0].tset: unknown key 'tset'" in err


def test_validate_reports_file_line_field_and_exits_non_zero(tmp_path: Path) -> None:
    good = write_one_file(tmp_path, "good.yaml", "${TORCH_ROOT}/test/a.py")
    bad = write_one_file(tmp_path, "bad.yaml", "a.py", "      tset: []\n")
    code, out, err = invoke("manifest", "validate", str(good), str(bad))
    assert code == 2  # bad input, as for every command
    assert f"ok: {good} (1 file(s), 0 test entries)" in out
    assert f"{bad}:4:7: test_suite_config.files[0].tset: unknown key 'tset'" in err
    assert invoke("manifest", "validate", str(good))[0] == 0


def test_committed_schema_is_in_sync() -> None:
    code, out, _ = invoke("manifest", "schema")
    assert code == 0
    assert json.loads(out) == schema_document()
    assert json.loads(SCHEMA_FILE.read_text()) == schema_document(), (
        "run: spyre-ci manifest schema -o test_manifests/schema.json"
    )
    assert "test_suite_config" in schema_document()["properties"]  # type: ignore[operator]


def test_lint_finds_variant_names_duplicates_missing_reasons_and_unknown_names(
    tmp_path: Path,
) -> None:
    src = tmp_path / "pytorch"
    (src / "test").mkdir(parents=True)
    (src / "test" / "test_x.py").write_text(
        "class TestX:\n    def test_add_things(self, device):\n        pass\n\n    def test_other(self):\n        pass\n"
    )
    manifest = write(
        tmp_path,
        "m.yaml",
        """\
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_x.py
      tests:
        - names: [TestX::test_add_things_spyre_float16]
        - names: [TestX::test_add_thing]
          mode: xfail
        - names: [TestX::test_other]
          mode: skip
          reason: crashes
        - names: [TestX::test_other]
          mode: xfail
          reason: flaky
  global:
    supported_ops: [add, {name: definitely_not_an_op}, {name: nn.functional.gelu, dtypes: [{name: int64}]}]
""",
    )
    code, _, err = invoke("manifest", "lint", str(manifest), "--pytorch-src", str(src))
    assert code == 1
    assert (
        "m.yaml:5: error: test_suite_config.files[0].tests[0].names[0]: 'TestX::test_add_things_spyre_float16' looks like a generated variant name"
        in err
    )
    assert (
        "m.yaml:7: error: test_suite_config.files[0].tests[1].mode: mode xfail without a reason"
        in err
    )
    assert (
        "m.yaml:11: error: test_suite_config.files[0].tests[3].names[0]: 'TestX::test_other' conflicts with tests[2] (mode skip vs xfail)"
        in err
    )
    assert "'TestX::test_add_thing' matches no test (closest: TestX::test_add_things" in err
    assert "op 'definitely_not_an_op' is not in the OpInfo database" in err
    assert "op 'nn.functional.gelu' never supports int64" in err
    assert (
        "m.yaml:3: warning: test_suite_config.files[0].path: no unlisted_test_mode: spyre-ci "
        "skips unlisted tests, torch-spyre's runner runs them as xfail" in err
    )


def test_explain_shows_mode_dtypes_tolerance_marks_and_rules(tmp_path: Path) -> None:
    manifest = write(
        tmp_path,
        "m.yaml",
        """\
test_suite_config:
  files:
    - path: ${TORCH_ROOT}/test/test_ops.py
      tests:
        - names: [TestCommon::test_compare_cpu]
          tags: [model__granite]
  global:
    supported_dtypes: [float16, {name: float32, precision: {atol: 0.01, rtol: 0.01}}]
    supported_ops: [{name: linalg.vector_norm, force_xfail: true, reason: norm adapter}]
""",
    )
    code, out, _ = invoke(
        "manifest",
        "explain",
        "test/test_ops.py::TestCommonSPYRE::test_compare_cpu_linalg_vector_norm_spyre_float32",
        "--manifest",
        str(manifest),
    )
    assert code == 0, out
    assert (
        "test:      test/test_ops.py::TestCommon::test_compare_cpu  op=linalg.vector_norm  dtype=float32"
        in out
    )
    assert "mode:      xfail" in out
    assert "tolerance: atol=0.01 rtol=0.01" in out
    assert "marks:     model__granite, op__linalg_vector_norm, dtype__float32" in out
    assert f"mode      xfail  <- global.supported_ops[].force_xfail ({manifest}:9)" in out


def test_merge_prints_the_merged_manifest_and_fails_on_conflicts(tmp_path: Path) -> None:
    a = write_one_file(
        tmp_path, "a.yaml", "${TORCH_ROOT}/test/a.py", "  global:\n    supported_ops: [add]\n"
    )
    b = write_one_file(
        tmp_path, "b.yaml", "${TORCH_ROOT}/test/b.py", "  global:\n    supported_ops: [mul]\n"
    )
    code, out, _ = invoke("manifest", "merge", str(a), str(b))
    assert code == 0
    merged = write(tmp_path, "merged.yaml", out)
    assert invoke("manifest", "validate", str(merged))[0] == 0
    suite = yaml.safe_load(out)["test_suite_config"]
    assert [f["path"] for f in suite["files"]] == [
        "${TORCH_ROOT}/test/a.py",
        "${TORCH_ROOT}/test/b.py",
    ]
    assert [op["name"] for op in suite["global"]["supported_ops"]] == ["add", "mul"]
    c = write_one_file(tmp_path, "c.yaml", "a.py", "      owner: x\n")
    d = write_one_file(tmp_path, "d.yaml", "a.py", "      owner: y\n")
    code, _, err = invoke("manifest", "merge", str(c), str(d))
    assert code == 2
    assert f"{d}:4:7: test_suite_config.files[0].owner: conflicting owner: 'x' vs 'y'" in err
