"""Run `spyre-ci select` and `spyre-ci test` for a plan. Thin subprocess shell.

They run as subprocesses (not imports) so that a workflow step, the relay's local
target and the end-to-end test all exercise the same command lines a user runs.
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


@dataclass(frozen=True)
class SelectResult:
    selected: int
    matrix: dict[str, Any]


def _manifest_args(manifests: list[Path]) -> list[str]:
    return [arg for manifest in manifests for arg in ("--manifest", str(manifest))]


def run_select(
    plan: Plan, pytorch_repo: Path, out: Path, shards: int, manifests: list[Path]
) -> SelectResult:
    out.mkdir(parents=True, exist_ok=True)
    args = [
        *SPYRE_CI,
        "select",
        "--pytorch-repo",
        str(pytorch_repo),
        "--out",
        str(out),
        "--shards",
        str(shards),
        *_manifest_args(manifests),
    ]
    if plan.base_sha:
        args += ["--from", plan.base_sha, "--to", plan.head_sha]
    else:
        args += ["--all", "--to", plan.head_sha]
    result = subprocess.run(args, check=False)
    if result.returncode not in (0,):
        raise click.ClickException(f"spyre-ci select exited with {result.returncode}")
    selection = json.loads((out / "selection.json").read_text())
    matrix = json.loads((out / "matrix.json").read_text())
    return SelectResult(selected=len(selection.get("selected", [])), matrix=matrix)


def run_test_shard(
    selection: Path, shard: int, pytorch_src: Path, junit: Path, manifests: list[Path]
) -> int:
    junit.parent.mkdir(parents=True, exist_ok=True)
    args = [
        *SPYRE_CI,
        "test",
        "--pytorch-src",
        str(pytorch_src),
        *_manifest_args(manifests),
        "--selection",
        str(selection),
        "--shard",
        str(shard),
        "--",
        f"--junitxml={junit}",
    ]
    return subprocess.run(args, check=False).returncode
