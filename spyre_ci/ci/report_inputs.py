"""What `spyre-ci ci report` reads from disk: JUnit files, step outcomes, the failing log. Thin shell.

Errors are `click` exceptions that name the file or the option at fault.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from spyre_ci.ci.junit import BadJUnit, CaseResult, parse_cases
from spyre_ci.ci.run_report import Step, log_tail, parse_step, steps_from_json
from spyre_ci.exit_codes import BadInput


def junit_files(junit_dir: Path | None) -> list[Path]:
    if junit_dir is None or not junit_dir.exists():
        return []
    return sorted(junit_dir.rglob("*.xml"))


def read_cases(junit_dir: Path | None) -> list[CaseResult]:
    cases: list[CaseResult] = []
    for path in junit_files(junit_dir):
        try:
            cases += parse_cases(path.read_text(errors="replace"), source=str(path))
        except BadJUnit as exc:
            raise BadInput(str(exc)) from exc
    return cases


def read_steps(steps_files: Sequence[Path], pairs: Sequence[str]) -> list[Step]:
    """Steps from `--steps-file` (JSON lists, in order) then `--step JOB/STEP=OUTCOME`."""
    steps: list[Step] = []
    for path in steps_files:
        if not path.exists():
            continue  # the step that writes it did not run (e.g. no test was selected)
        try:
            steps += steps_from_json(json.loads(path.read_text()), str(path))
        except (OSError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--steps-file") from exc
    for pair in pairs:
        if pair.rpartition("=")[2].strip() == "":
            continue  # `needs.<job>.outputs.<step>_outcome` is empty when the job never ran
        try:
            steps.append(parse_step(pair))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--step") from exc
    return steps


def read_log_tail(
    given: str | None, steps: Sequence[Step], junit_dir: Path | None
) -> dict[str, Any] | None:
    """The tail of the failing step's log: `--log-tail STEP=FILE`, else the log `ci test`
    wrote next to a failing shard's JUnit file (`shard-N.log`)."""
    if given:
        step, sep, file = given.partition("=")
        if not sep or not step or not file:
            raise click.BadParameter(f"{given!r} is not STEP=FILE", param_hint="--log-tail")
        path = Path(file)
        if not path.exists():
            return None
        return log_tail(path.read_text(errors="replace"), step)
    failing_jobs = {s.job for s in steps if s.outcome == "failure" and s.kind == "test"}
    for path in junit_files(junit_dir):
        log = path.with_suffix(".log")
        job = f"test (shard {path.stem.removeprefix('shard-')})"
        if log.exists() and (job in failing_jobs or _has_failures(path)):
            return log_tail(log.read_text(errors="replace"), f"{job} / test")
    return None


def _has_failures(path: Path) -> bool:
    try:
        return any(c.failing for c in parse_cases(path.read_text(errors="replace")))
    except BadJUnit:
        return False
