"""Run `spyre-ci select` and `spyre-ci test` for a plan. Thin subprocess shell.

They run as subprocesses (not imports) so that a workflow step, the relay's local
target and the end-to-end test all exercise the same command lines a user runs.
`spyre-ci select` exits 0 when it selected tests and 4 when it selected none
(docs/selection.md); anything else fails the step.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from spyre_ci.ci.plan import Plan

SPYRE_CI = [sys.executable, "-m", "spyre_ci"]
SELECTED, NOTHING_SELECTED = 0, 4
FULL_TIER_MARKER = "full-tier.json"


@dataclass(frozen=True)
class SelectResult:
    selected: int | None  # None: the full tier (every reused test)
    matrix: dict[str, Any]

    @property
    def has_tests(self) -> bool:
        return self.selected is None or self.selected > 0


def _manifest_args(manifests: list[Path]) -> list[str]:
    return [arg for manifest in manifests for arg in ("--manifest", str(manifest))]


def run_select(
    plan: Plan, pytorch_repo: Path, out: Path, shards: int, manifests: list[Path]
) -> SelectResult:
    out.mkdir(parents=True, exist_ok=True)
    if not plan.base_sha:
        # Nothing to compare with (full tier, new branch, release tag): run every reused test.
        (out / FULL_TIER_MARKER).write_text(json.dumps({"reason": plan.reason, "tier": "full"}))
        return SelectResult(selected=None, matrix={"include": [{"shard": 1}]})
    args = [
        *SPYRE_CI, "select",
        "--pytorch-repo", str(pytorch_repo), "--pytorch-src", str(pytorch_repo),
        "--from", plan.base_sha, "--to", plan.head_sha,
        "--out", str(out), "--shards", str(shards), *_manifest_args(manifests),
    ]  # fmt: skip
    code = subprocess.run(args, check=False).returncode
    if code not in (SELECTED, NOTHING_SELECTED):
        # the step fails as select did (2 bad input, 3 fetch failure), not with a generic 1
        click.echo(f"Error: spyre-ci select exited with {code} (see its output above)", err=True)
        raise SystemExit(code)
    try:
        selection = json.loads((out / "selection.json").read_text())
        matrix = json.loads((out / "matrix.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        message = f"spyre-ci select wrote no readable output in {out}: {exc}"
        raise click.ClickException(message) from exc
    return SelectResult(selected=len(selection.get("selected", [])), matrix=matrix)


def run_test_shard(
    selection: Path, shard: int, pytorch_src: Path, junit: Path, manifests: list[Path]
) -> int:
    """`spyre-ci test` for one shard of the selection (the full tier: every reused test).

    Its output also goes to `<junit>.log` beside the JUnit file, so that the report job,
    which downloads the JUnit files, can send the tail of a failing shard's log.
    """
    junit.parent.mkdir(parents=True, exist_ok=True)
    chosen = [] if (selection / FULL_TIER_MARKER).exists() else [
        "--selection", str(selection), "--shard", str(shard),
    ]  # fmt: skip
    args = [
        *SPYRE_CI, "test", "--pytorch-src", str(pytorch_src), *_manifest_args(manifests),
        *chosen, "--", f"--junitxml={junit}",
    ]  # fmt: skip
    return _tee(args, junit.with_suffix(".log"))


def _tee(args: list[str], log: Path) -> int:
    """Run `args`, copying its output to our stdout and to `log`; its exit code."""
    with log.open("w", encoding="utf-8", errors="replace") as sink:
        process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
        assert process.stdout is not None
        for line in process.stdout:
            sys.stdout.write(line)
            sink.write(line)
        sys.stdout.flush()
        return process.wait()
