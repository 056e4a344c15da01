"""`spyre-ci ci checkout` + `spyre-ci ci select` on the demo upstream (real git, real selection)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git

from spyre_ci.ci.demo import TEST_FILE, build_demo_upstream
from spyre_ci.ci.local_workflow import parse_github_output
from spyre_ci.ci.plan import plan_manual


def _ci(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    output = tmp_path / "output.txt"
    output.write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "spyre_ci", "ci", *args],
        env={**os.environ, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result, parse_github_output(output.read_text())


def test_docstring_only_change_selects_nothing_and_skips_the_test_job(tmp_path: Path) -> None:
    demo = build_demo_upstream(tmp_path / "demo")
    repo = git.Repo(demo.path)
    repo.create_head("pr-docs", demo.main_sha).checkout()
    path = demo.path / TEST_FILE
    path.write_text(path.read_text().replace("(demo)", "(demo, reworded)"))
    repo.index.add([TEST_FILE])
    head = repo.index.commit("reword the module docstring").hexsha
    plan = plan_manual({"pytorch_ref": f"{demo.main_sha}..{head}"}, run_id="1")
    plan_path = tmp_path / "selection" / "plan.json"
    plan_path.parent.mkdir()
    plan_path.write_text(json.dumps(plan.to_json()))

    checkout, outputs = _ci(
        tmp_path, "checkout", "--plan", str(plan_path), "--upstream-url", demo.url,
        "--dest", str(tmp_path / "pytorch"),
    )  # fmt: skip
    assert checkout.returncode == 0, checkout.stderr
    assert (outputs["head_sha"], outputs["base_sha"]) == (head, demo.main_sha)

    select, outputs = _ci(
        tmp_path, "select", "--plan", str(plan_path), "--pytorch-repo", str(tmp_path / "pytorch"),
        "--out", str(tmp_path / "selection"), "--shards", "2", "--manifest", str(demo.manifest),
    )  # fmt: skip
    assert select.returncode == 0, select.stderr  # `spyre-ci select` exit 4: nothing selected
    assert (outputs["selected"], outputs["has_tests"]) == ("0", "false")
    assert json.loads(outputs["matrix"]) == {"include": []}
    assert "selected 0 test(s)" in select.stderr
