"""`spyre-ci test`: one command, no environment set-up; and a real upstream file when available."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import git
import pytest
import yaml

from test_manifests.run import SHIPPED_DIR
from tests.manifests.upstream_sources import OPS_MODULE
from tests.support.pytorch_src import pytorch_src

SPYRE_CI = [sys.executable, "-c", "from spyre_ci.cli import main; main()"]
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("PYTORCH_TESTING", "TORCH_TEST"))}


def spyre_ci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SPYRE_CI, *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def spyre_ci_test(
    *manifests: str,
    src: Path | str,
    cwd: Path,
    options: tuple[str, ...] = (),
    pytest_args: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """`spyre-ci test` with `manifests`, the upstream tree `src` and further `options`; pytest
    gets `-p no:cacheprovider` and `pytest_args`."""
    manifest_args = [arg for manifest in manifests for arg in ("--manifest", manifest)]
    return spyre_ci(
        "test",
        *manifest_args,
        "--pytorch-src",
        str(src),
        *options,
        "--",
        "-p",
        "no:cacheprovider",
        *pytest_args,
        cwd=cwd,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path)


def write_tree(root: Path) -> Path:
    """An upstream-shaped tree at `root`: test/test_ops_like.py and a manifest m.yaml."""
    (root / "test").mkdir()
    (root / "test" / "test_ops_like.py").write_text(textwrap.dedent(OPS_MODULE))
    (root / "m.yaml").write_text(
        textwrap.dedent(
            """\
            test_suite_config:
              files:
                - path: ${TORCH_ROOT}/test/test_ops_like.py
                  tests:
                    - names: [TestOpsLike::test_plain, TestOpsLike::test_grad_mode]
                    - names: [TestOpsLike::test_raises]
                      mode: xfail
                      reason: raises on purpose
              global:
                supported_dtypes: [float16, float32]
                supported_ops: [add]
            """
        )
    )
    return root


def test_one_command_runs_the_manifest_with_junit_marks(tree: Path) -> None:
    junit = tree / "out.xml"
    result = spyre_ci_test("m.yaml", src=tree, cwd=tree, pytest_args=(f"--junitxml={junit}",))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 1 xfailed" in result.stdout
    names = {c.get("name") for c in ET.parse(junit).getroot().iter("testcase")}
    assert names == {
        "test_plain_spyre_float16",
        "test_plain_spyre_float32",
        "test_grad_mode_spyre",
        "test_raises_add_spyre_float32",
    }


def test_a_selection_shard_runs_exactly_its_ids_with_the_overlay(tree: Path) -> None:
    selection = tree / "selection"
    (selection / "shards").mkdir(parents=True)
    (selection / "shards" / "2.txt").write_text(
        "# shard 2\ntest/test_ops_like.py::TestOpsLikeSPYRE::test_plain_spyre_float16\n"
    )
    (selection / "manifest.yaml").write_text(
        "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_ops_like.py\n"
        "      labels: [selected]\n      tests:\n        - names: [TestOpsLike::test_plain]\n"
        "          mode: mandatory_success\n          labels: [selected]\n"
    )
    junit = tree / "shard.xml"
    result = spyre_ci_test(
        "m.yaml",
        src=tree,
        cwd=tree,
        options=("--selection", str(selection), "--shard", "2"),
        pytest_args=(f"--junitxml={junit}",),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    (case,) = ET.parse(junit).getroot().iter("testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert case.get("name") == "test_plain_spyre_float16"
    assert props["marks"] == "dtype__float16,selected"


def test_zero_selected_tests_fail_before_anything_runs(tree: Path) -> None:
    (tree / "none.yaml").write_text(
        "test_suite_config:\n  files:\n    - path: ${TORCH_ROOT}/test/test_ops_like.py\n"
    )
    result = spyre_ci_test("none.yaml", src=tree, cwd=tree)
    assert result.returncode == 2  # pytest's usage error, reported as our bad input
    assert "selects zero tests" in result.stderr
    assert "passed" not in result.stdout


SPAWNING_TEST = """
import subprocess
import sys
from pathlib import Path

from torch.testing._internal.common_utils import TestCase


class TestSpawns(TestCase):
    def test_child_process(self):
        child = Path(__file__).with_name("child.py")
        done = subprocess.run([sys.executable, str(child)], capture_output=True, text=True)
        print(done.stdout, done.stderr)
        assert done.returncode == 0
"""

CHILD = """
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase


class TestChild(TestCase):
    @dtypes(torch.float16, torch.float32)
    def test_plain(self, device, dtype):
        pass

    def test_unlisted(self, device):
        pass


instantiate_device_type_tests(TestChild, globals())
if __name__ == "__main__":
    generated = sorted(
        f"{name}.{test}"
        for name, cls in list(globals().items())
        if name.startswith("TestChild") and isinstance(cls, type)
        for test in vars(cls)
        if test.startswith("test_")
    )
    print("CHILD GENERATED", generated)
"""


def test_subprocesses_of_upstream_tests_apply_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_spawns.py").write_text(SPAWNING_TEST)
    (tmp_path / "test" / "child.py").write_text(CHILD)
    (tmp_path / "m.yaml").write_text(
        textwrap.dedent(
            """\
            test_suite_config:
              files:
                - path: ${TORCH_ROOT}/test/test_spawns.py
                  unlisted_test_mode: mandatory_success
                - path: ${TORCH_ROOT}/test/child.py
                  tests:
                    - names: [TestChild::test_plain]
              global:
                supported_dtypes: [float32]
            """
        )
    )
    result = spyre_ci_test("m.yaml", src=tmp_path, cwd=tmp_path, pytest_args=("-s",))
    assert result.returncode == 0, result.stdout + result.stderr
    # The child generated exactly what the manifest runs: for the spyre device only, the
    # listed test only, the float32 variant only (float16 is above the dtype ceiling).
    assert "CHILD GENERATED ['TestChildSPYRE.test_plain_spyre_float32']" in result.stdout
    assert "2 passed" in result.stdout


@pytest.mark.needs_pytorch_src
def test_a_real_upstream_file_runs_from_the_pytorch_source_tree(
    pytestconfig: pytest.Config, tmp_path: Path
) -> None:
    src = str(pytorch_src(pytestconfig, "test/test_view_ops.py"))
    junit = tmp_path / "upstream.xml"
    result = spyre_ci_test(
        str(SHIPPED_DIR / "test_view_ops.yaml"),
        str(SHIPPED_DIR / "spyre_device.yaml"),
        src=src,
        cwd=tmp_path,
        pytest_args=(f"--junitxml={junit}",),
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    cases = {c.attrib["name"]: c for c in ET.parse(junit).getroot().iter("testcase")}
    # the dtype ceiling (float16, bfloat16, float32; bool is auxiliary) shapes what upstream generated
    broadcast_to = {name for name in cases if name.startswith("test_broadcast_to_")}
    assert broadcast_to == {"test_broadcast_to_spyre_float16", "test_broadcast_to_spyre_float32"}
    assert not any(name.endswith(("float64", "_bool", "complex64")) for name in cases)
    assert all("_spyre" in name for name in cases)
    props = {
        p.get("name"): p.get("value") for p in cases["test_transpose_view_spyre"].iter("property")
    }
    assert props["marks"] == "core,smoke"


def test_a_tree_inside_another_project_does_not_take_that_projects_pytest_settings(
    tmp_path: Path,
) -> None:
    # A local run directory checks upstream out inside this project, whose pyproject.toml
    # turns warnings into errors; upstream's tests must run with upstream's settings.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "--no-such-option"\n'
    )
    checkout = tmp_path / "runs" / "1" / "pytorch"
    checkout.mkdir(parents=True)
    write_tree(checkout)
    result = spyre_ci_test("m.yaml", src=checkout, cwd=checkout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 1 xfailed" in result.stdout


def test_pytorchs_own_pytest_ini_applies(tree: Path) -> None:
    without = spyre_ci_test("m.yaml", src=tree, cwd=tree)
    assert "XFAIL " not in without.stdout
    (tree / "pytest.ini").write_text("[pytest]\naddopts = -rx\n")  # list xfailed tests
    result = spyre_ci_test("m.yaml", src=tree, cwd=tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 1 xfailed" in result.stdout
    assert "XFAIL test/test_ops_like.py::" in result.stdout


SHARD_ID = "test/test_ops_like.py::TestOpsLikeSPYRE::test_plain_spyre_float16"


def write_selection(
    tree: Path, shards: dict[int, str], manifests: list[str] | None = None, sha: str = ""
) -> Path:
    """A `spyre-ci select` output at tree/selection: shard files and selection.json."""
    selection = tree / "selection"
    (selection / "shards").mkdir(parents=True)
    for n, text in shards.items():
        (selection / "shards" / f"{n}.txt").write_text(text)
    doc = {"manifests": manifests or [], "head": {"label": "h", "sha": sha}, "selected": []}
    (selection / "selection.json").write_text(json.dumps(doc))
    return selection


def test_an_empty_shard_runs_nothing_and_exits_0(tree: Path) -> None:
    # select writes shards 1..--shards for a fixed matrix; shard 3 has no test
    selection = write_selection(tree, {1: SHARD_ID + "\n", 2: "", 3: "", 4: ""})
    for cwd in (tree, tree / "test"):  # from inside the checkout nothing else runs either
        result = spyre_ci_test(
            str(tree / "m.yaml"),
            src=tree,
            cwd=cwd,
            options=("--selection", str(selection), "--shard", "3"),
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"shard 3 of selection {selection} is empty: nothing to run" in result.stderr
        assert "passed" not in result.stdout and "pytest " not in result.stderr


@pytest.mark.parametrize("shard", ["0", "9"])
def test_a_shard_outside_the_selection_is_a_usage_error(tree: Path, shard: str) -> None:
    selection = write_selection(tree, {1: SHARD_ID + "\n", 2: "", 3: "", 4: ""})
    result = spyre_ci_test(
        "m.yaml", src=tree, cwd=tree, options=("--selection", str(selection), "--shard", shard)
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"--shard {shard}" in result.stderr and "valid: 1..4" in result.stderr
    assert "passed" not in result.stdout


def test_a_shard_without_a_selection_is_a_usage_error(tree: Path) -> None:
    result = spyre_ci_test("m.yaml", src=tree, cwd=tree, options=("--shard", "2"))
    assert result.returncode == 2
    assert "--shard N needs --selection DIR" in result.stderr
    assert "passed" not in result.stdout


def test_a_selection_runs_under_the_manifests_it_was_made_with(tree: Path) -> None:
    # no --manifest: selection.json's manifests apply, not the shipped ones (which do not
    # name test_ops_like.py and would select zero tests)
    selection = write_selection(tree, {1: SHARD_ID + "\n"}, manifests=[str(tree / "m.yaml")])
    junit = tree / "shard.xml"
    result = spyre_ci(
        "test",
        "--pytorch-src",
        str(tree),
        "--selection",
        str(selection),
        "--shard",
        "1",
        "--",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        cwd=tree,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"--manifest {tree / 'm.yaml'}" in result.stderr
    assert [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")] == [
        "test_plain_spyre_float16"
    ]


def test_a_recorded_manifest_that_is_gone_is_an_error_naming_it(tree: Path) -> None:
    gone = tree / "gone.yaml"
    selection = write_selection(tree, {1: SHARD_ID + "\n"}, manifests=[str(gone)])
    result = spyre_ci(
        "test", "--pytorch-src", str(tree), "--selection", str(selection), "--shard", "1", cwd=tree
    )
    assert result.returncode == 2
    assert f"manifest {gone}" in result.stderr and "no longer exists" in result.stderr


def _git_tree(tree: Path) -> str:
    repo = git.Repo.init(tree)
    repo.index.add(["test/test_ops_like.py"])
    return repo.index.commit("upstream").hexsha


def test_a_checkout_at_another_commit_than_analysed_is_warned_about(tree: Path) -> None:
    head = _git_tree(tree)
    for sha, warned in (("0" * 40, True), (head, False)):
        selection = write_selection(tree, {1: SHARD_ID + "\n"}, [str(tree / "m.yaml")], sha)
        result = spyre_ci_test(
            src=tree, cwd=tree, options=("--selection", str(selection), "--shard", "1")
        )
        assert result.returncode == 0, result.stdout + result.stderr
        warning = f"warning: --pytorch-src {tree} is at {head[:12]}, the selection analysed"
        assert (warning in result.stderr) is warned, result.stderr
        shutil.rmtree(selection)


NO_CACHE = ("--", "-p", "no:cacheprovider")


def test_a_tree_found_through_the_environment_is_checked_too(tree: Path) -> None:
    head = _git_tree(tree)
    selection = write_selection(tree, {1: SHARD_ID + "\n"}, [str(tree / "m.yaml")], "0" * 40)
    result = subprocess.run(
        [*SPYRE_CI, "test", "--selection", str(selection), "--shard", "1", *NO_CACHE],
        cwd=tree,
        env={**ENV, "SPYRE_CI_PYTORCH_SRC": str(tree)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"is at {head[:12]}, the selection analysed {'0' * 12}" in result.stderr


def test_ids_the_tree_does_not_generate_are_reported_and_the_others_run(tree: Path) -> None:
    bogus = "test/test_ops_like.py::TestOpsLikeSPYRE::test_plain_spyre_int7"
    other = "test/test_gone.py::TestGoneSPYRE::test_x_spyre"
    selection = write_selection(tree, {1: f"{bogus}\n{SHARD_ID}\n{other}\n"})
    result = spyre_ci_test(
        "m.yaml", src=tree, cwd=tree, options=("--selection", str(selection), "--shard", "1")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert f"NOT FOUND {bogus}" in result.stdout and f"NOT FOUND {other}" in result.stdout
    assert "2 of 3 selected test id(s) not found" in result.stdout


def test_a_shard_whose_ids_all_do_not_exist_fails_naming_them(tree: Path) -> None:
    bogus = "test/test_ops_like.py::TestOpsLikeSPYRE::test_plain_spyre_int7"
    selection = write_selection(tree, {1: f"{bogus}\n"})
    result = spyre_ci_test(
        "m.yaml", src=tree, cwd=tree, options=("--selection", str(selection), "--shard", "1")
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "none of the 1 test id(s)" in result.stderr and bogus in result.stderr
    assert "passed" not in result.stdout


def test_a_class_id_runs_every_test_of_that_class(tree: Path) -> None:
    # run_as of a `*` pattern: the whole instantiated class
    selection = write_selection(tree, {1: "test/test_ops_like.py::TestOpsLikeSPYRE\n"})
    result = spyre_ci_test(
        "m.yaml", src=tree, cwd=tree, options=("--selection", str(selection), "--shard", "1")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 1 xfailed" in result.stdout


def test_without_a_shard_a_template_id_runs_its_run_as_class(tree: Path) -> None:
    # selection.json only (no --shard): a `*` id that could not be enumerated runs its
    # `run_as` class instead of being reported not found
    selection = tree / "selection"
    selection.mkdir()
    template = "test/test_ops_like.py::TestOpsLikeSPYRE::test_plain*"
    doc = {
        "manifests": [],
        "head": {"label": "h", "sha": ""},
        "selected": [{"id": template, "run_as": "test/test_ops_like.py::TestOpsLikeSPYRE"}],
    }
    (selection / "selection.json").write_text(json.dumps(doc))
    result = spyre_ci_test("m.yaml", src=tree, cwd=tree, options=("--selection", str(selection)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 1 xfailed" in result.stdout
    assert "NOT FOUND" not in result.stdout


def test_without_a_pytorch_tree_one_line_names_a_real_entry(tmp_path: Path) -> None:
    env = {k: v for k, v in ENV.items() if k not in ("SPYRE_CI_PYTORCH_SRC", "PYTORCH_ROOT")}
    result = subprocess.run(
        [*SPYRE_CI, "test"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert "path token ${TORCH_ROOT} has no value: pass --pytorch-src DIR" in line
    # the location is true: that file's files[N] entry has its path on that line
    where, field = line.split(": ")[:2]
    file, lineno, _ = where.rsplit(":", 2)
    index = int(field.split("files[")[1].split("]")[0])
    suite = yaml.safe_load(Path(file).read_text())["test_suite_config"]
    assert index < len(suite["files"])
    written = Path(file).read_text().splitlines()[int(lineno) - 1]
    assert f"path: {suite['files'][index]['path']}" in written


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"selected": [\n 1,]}', "selection.json:2:4: not JSON: Expecting value"),
        ("[]", "selection.json:1:1: the selection must be a JSON object"),
    ],
)
def test_a_bad_selection_json_is_bad_input_at_its_line(
    tree: Path, text: str, expected: str
) -> None:
    selection = tree / "selection"
    selection.mkdir()
    (selection / "selection.json").write_text(text)
    result = spyre_ci_test("m.yaml", src=tree, cwd=tree, options=("--selection", str(selection)))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"{selection}/{expected}"]


def test_a_selection_without_selection_json_names_the_file_without_a_location(
    tree: Path,
) -> None:
    selection = tree / "selection"
    selection.mkdir()
    result = spyre_ci_test("m.yaml", src=tree, cwd=tree, options=("--selection", str(selection)))
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{selection}/selection.json: cannot read the selection:")


def test_failing_tests_exit_1(tree: Path) -> None:
    must_pass = tree / "must_pass.yaml"  # test_raises raises on purpose: here it must pass
    must_pass.write_text(
        (tree / "m.yaml").read_text().replace("mode: xfail", "mode: mandatory_success")
    )
    failed = spyre_ci_test("must_pass.yaml", src=tree, cwd=tree)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "1 failed" in failed.stdout


def test_pytests_exit_codes_map_onto_the_shared_convention() -> None:
    from test_manifests.cli import exit_code_of_pytest

    expected = {
        pytest.ExitCode.OK: 0,
        pytest.ExitCode.TESTS_FAILED: 1,
        pytest.ExitCode.INTERRUPTED: 1,  # collection errors, Ctrl-C: the run failed
        pytest.ExitCode.INTERNAL_ERROR: 1,
        pytest.ExitCode.USAGE_ERROR: 2,  # bad input, as for every command
        pytest.ExitCode.NO_TESTS_COLLECTED: 5,
    }
    assert {code: exit_code_of_pytest(code) for code in expected} == expected
