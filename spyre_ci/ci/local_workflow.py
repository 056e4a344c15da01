"""Run upstream-dispatch.yml's jobs on this machine, step by step, as GitHub would.

Used by the relay's built-in local target and by the end-to-end test's fake
GitHub: each step is the same `spyre-ci ci ...` command line the workflow runs, in
a subprocess with a workflow-like environment (GITHUB_EVENT_PATH, GITHUB_OUTPUT,
GITHUB_JOB, RUNNER_TEMP, ...). Jobs follow the workflow's rules: a failed step
skips the rest of its job, `test` runs only when something was selected (one
shard after the other), `report` always runs and gets `needs` as GitHub builds it --
unless the claim said the dispatch belongs to another run: then the run stops there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spyre_ci.ci.run_report import Step, step_kind

SPYRE_CI = [sys.executable, "-m", "spyre_ci"]


@dataclass(frozen=True)
class LocalRun:
    """What the local run needs to know; everything else comes from the event."""

    event_name: str
    event: Mapping[str, Any]
    workdir: Path
    upstream_url: str
    repository: str = "local/spyre-ci"  # plays GITHUB_REPOSITORY
    server_url: str = "http://127.0.0.1"
    shards: int = 2
    run_id: str = field(default_factory=lambda: str(uuid.uuid4().int % 10**10))
    extra_env: Mapping[str, str] = field(default_factory=dict)  # tokens, callback URL
    # The event file every step reads (GITHUB_EVENT_PATH); None: `event` written to the
    # work directory. The local target passes its own, which a re-dispatch may refresh.
    event_path: Path | None = None


@dataclass
class JobOutcome:
    result: str = "skipped"  # success | failure | skipped (GitHub's needs.<job>.result)
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class StepRecord:
    job: str
    command: list[str]
    returncode: int
    log: Path

    def as_step(self) -> Step:
        """As `run_report.steps` names it: `test-2-checkout` -> job `test (shard 2)`, `checkout`."""
        job, _, name = self.job.partition("-")
        if job == "test":
            shard, _, name = name.partition("-")
            job = f"test (shard {shard})"
        outcome = "success" if self.returncode == 0 else "failure"
        return Step(job, name, step_kind(name), outcome)


@dataclass
class WorkflowResult:
    jobs: dict[str, JobOutcome]
    steps: list[StepRecord]

    @property
    def conclusion(self) -> str:
        return self.jobs["report"].outputs.get("conclusion", "")


def parse_github_output(text: str) -> dict[str, str]:
    """Read a GITHUB_OUTPUT file: `key=value` lines and `key<<MARKER` heredocs."""
    values: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, marker = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == marker:
                    break
                body.append(inner)
            values[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            values[key] = value
    return values


class _Runner:
    def __init__(self, run: LocalRun) -> None:
        self.run = run
        self.steps: list[StepRecord] = []
        run.workdir.mkdir(parents=True, exist_ok=True)
        if run.event_path is not None:
            self.event_path = run.event_path.resolve()
        else:
            self.event_path = run.workdir / "event.json"
            self.event_path.write_text(json.dumps(run.event))

    def env(self, job: str, output: Path) -> dict[str, str]:
        temp = self.run.workdir / "runner-temp" / job
        temp.mkdir(parents=True, exist_ok=True)
        return {
            **os.environ,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": self.run.event_name,
            "GITHUB_EVENT_PATH": str(self.event_path),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_JOB": job,
            "GITHUB_WORKFLOW": "upstream-dispatch",
            "GITHUB_REPOSITORY": self.run.repository,
            "GITHUB_SERVER_URL": self.run.server_url,
            "GITHUB_RUN_ID": self.run.run_id,
            "GITHUB_RUN_ATTEMPT": "1",
            "RUNNER_TEMP": str(temp),
            **self.run.extra_env,
        }

    def step(self, job: JobOutcome, name: str, *args: str, always: bool = False) -> bool:
        """Run one step of `job` unless an earlier one failed (or `always`, as `if: always()`);
        collect its outputs. The job fails when any of its steps fails."""
        if job.result == "failure" and not always:
            return False
        index = len(self.steps)
        output = self.run.workdir / "outputs" / f"{index:02d}-{name}.txt"
        output.parent.mkdir(parents=True, exist_ok=True)
        output.touch()
        log = self.run.workdir / "logs" / f"{index:02d}-{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        command = [*SPYRE_CI, "ci", *args]
        with log.open("w") as sink:
            code = subprocess.run(
                command,
                env=self.env(name.split("-")[0], output),
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=self.run.workdir,
                check=False,
            ).returncode
        self.steps.append(StepRecord(name, command, code, log))
        job.outputs.update(parse_github_output(output.read_text()))
        if code != 0:
            job.result = "failure"
        self.progress(name)
        return code == 0

    total_steps = 0  # known once the selection has set the matrix; 0: no progress reports
    reporting = False  # the report job's in_progress callback went out

    def progress(self, finished: str) -> None:
        """Tell the relay how many steps are done (as the report job does while it waits)."""
        if not (self.reporting and self.total_steps) or finished == "report-report":
            return
        done = min(len(self.steps), self.total_steps)
        log = self.run.workdir / "progress.log"  # not a step: kept out of logs/
        with log.open("a") as sink:
            subprocess.run(
                [*SPYRE_CI, "ci", "callback", "--status", "in_progress",
                 "--progress", f"{done}/{self.total_steps}", "--current-step", finished],
                env=self.env("report", self.run.workdir / "outputs" / "progress.txt"),
                stdout=sink, stderr=subprocess.STDOUT, cwd=self.run.workdir, check=False,
            )  # fmt: skip

    def write_steps(self) -> Path:
        """The steps so far, for `ci report --steps-file`."""
        path = self.run.workdir / "steps.json"
        path.write_text(json.dumps([record.as_step().as_dict() for record in self.steps]))
        return path

    def failing_log(self) -> list[str]:
        """`--log-tail STEP=FILE` for the first failed step, if one failed."""
        for record in self.steps:
            if record.returncode != 0:
                step = record.as_step()
                return ["--log-tail", f"{step.job} / {step.name}={record.log}"]
        return []


def run_local_workflow(run: LocalRun) -> WorkflowResult:
    """Run the select, test and report jobs; the report job always runs."""
    # Steps run in the work directory: every path they get must be absolute.
    upstream = Path(run.upstream_url)
    run = dataclasses.replace(
        run,
        workdir=run.workdir.resolve(),
        upstream_url=str(upstream.resolve()) if upstream.exists() else run.upstream_url,
    )
    runner = _Runner(run)
    selection = run.workdir / "selection"
    pytorch = run.workdir / "pytorch"
    junit = run.workdir / "junit"
    plan = str(selection / "plan.json")
    # the select job and every test leg check out the same upstream commits
    checkout = (
        "checkout",
        "--plan",
        plan,
        "--upstream-url",
        run.upstream_url,
        "--dest",
        str(pytorch),
    )

    select = JobOutcome(result="success")
    runner.step(select, "select-claim", "claim")
    if select.outputs.get("duplicate") == "true":
        # Another run owns this dispatch: nothing is tested or reported (the report job's
        # `if:` skips it too).
        return WorkflowResult(
            {"select": select, "test": JobOutcome(), "report": JobOutcome()}, runner.steps
        )
    runner.step(select, "select-plan", "plan", "--write", plan)
    if select.outputs.get("run") == "true":
        runner.step(select, "select-checkout", *checkout)
        runner.step(
            select,
            "select-select",
            "select",
            "--plan",
            plan,
            "--pytorch-repo",
            str(pytorch),
            "--out",
            str(selection),
            "--shards",
            str(run.shards),
        )

    # report starts once select is done: in_progress now, completed after the tests.
    report = JobOutcome(result="success")
    testing = select.result == "success" and select.outputs.get("has_tests") == "true"
    shards = _shards(select.outputs.get("matrix", "")) if testing else []
    # select's steps, the callback, two steps per leg, the report
    runner.total_steps = len(runner.steps) + 1 + 2 * len(shards) + 1
    runner.step(report, "report-callback", "callback", "--status", "in_progress")
    runner.reporting = report.result == "success"

    test = JobOutcome()
    if testing:
        test.result = "success"
        for shard in shards:
            leg = JobOutcome(result="success")
            runner.step(leg, f"test-{shard}-checkout", *checkout)
            runner.step(
                leg,
                f"test-{shard}-test",
                "test",
                "--selection",
                str(selection),
                "--shard",
                shard,
                "--pytorch-src",
                str(pytorch),
                "--junit",
                str(junit / f"shard-{shard}.xml"),
            )
            if leg.result == "failure":
                test.result = "failure"

    needs = {"select": {"result": select.result, "outputs": select.outputs}}
    runner.step(
        report,
        "report-report",
        "report",
        "--junit-dir",
        str(junit),
        "--needs",
        json.dumps(needs),
        "--job-result",
        f"test={test.result}",
        "--job-status",
        report.result,
        "--upstream-sha",
        select.outputs.get("head_sha", ""),
        "--selection-dir",
        str(selection),
        "--steps-file",
        str(runner.write_steps()),
        *runner.failing_log(),
        always=True,
    )
    return WorkflowResult({"select": select, "test": test, "report": report}, runner.steps)


def _shards(matrix_json: str) -> list[str]:
    try:
        matrix = json.loads(matrix_json) if matrix_json else {}
    except json.JSONDecodeError:
        return []
    return [str(entry["shard"]) for entry in matrix.get("include", []) if "shard" in entry]
