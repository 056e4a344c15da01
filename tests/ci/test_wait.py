"""`spyre-ci ci wait-for-jobs`: the report job waits for the test matrix through GitHub's API."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from spyre_ci.ci import jobs_wait
from spyre_ci.ci.jobs_wait import WaitFailed, matrix_state, wait_for_jobs
from spyre_ci.ci.local_workflow import parse_github_output
from tests.ci.conftest import dispatch_event, load_webhook
from tests.ci.loopback import REQUEST_TOKEN, loopback_server
from tests.support.fake_github import FakeGitHub

REPO = "acme/torch-spyre"


def _job(name: str, status: str, conclusion: str | None = None) -> dict[str, Any]:
    return {"name": name, "status": status, "conclusion": conclusion}


def _steps(*outcomes: tuple[str, str | None]) -> list[dict[str, Any]]:
    return [
        {"name": name, "status": "completed" if c else "queued", "conclusion": c, "number": i}
        for i, (name, c) in enumerate(outcomes, 1)
    ]


LEG_STEPS = {
    "ok": _steps(("Set up job", "success"), ("Run shard 1", "success")),
    "checkout": _steps(
        ("Set up job", "success"),
        ("Check out the upstream test files at the tested commit", "failure"),
        ("Run shard 2", "skipped"),
    ),
}


def test_matrix_state() -> None:
    select, report = _job("select", "completed", "success"), _job("report", "in_progress")
    legs = [_job("test (shard 1)", "completed", "success"), _job("test (shard 2)", "in_progress")]
    assert not matrix_state([select, report, legs[0]], "test", expected=2).done  # leg 2 not listed
    assert not matrix_state([select, report, *legs], "test", expected=2).done
    legs[1] = _job("test (shard 2)", "completed", "failure")
    assert matrix_state([select, report, *legs], "test", 2) == matrix_state(legs, "test", 2)
    assert (matrix_state(legs, "test", 2).done, matrix_state(legs, "test", 2).result) == (
        True,
        "failure",
    )
    legs[1] = _job("test (shard 2)", "completed", "cancelled")
    assert matrix_state(legs, "test", 2).result == "cancelled"
    assert matrix_state([_job("testing", "completed", "failure")], "test", 0).result == "skipped"


class ScriptedJobs:
    """GET .../actions/runs/{id}/attempts/{n}/jobs answers from a script, one entry per call."""

    def __init__(self, script: list[list[dict[str, Any]]]) -> None:
        self.script = script
        self.calls = 0

    def router(self, fake: FakeGitHub) -> APIRouter:
        api = APIRouter()

        @api.get("/repos/{owner}/{repo}/actions/runs/{run_id}/attempts/{attempt}/jobs")
        async def jobs(
            owner: str, repo: str, run_id: int, attempt: int, request: Request
        ) -> Response:
            refused = fake.guard(request, f"{owner}/{repo}", write=False)
            if refused is not None:
                return refused
            page = self.script[min(self.calls, len(self.script) - 1)]
            self.calls += 1
            return JSONResponse({"total_count": len(page), "jobs": page})

        return api


@pytest.fixture
def run_wait(
    tmp_path: Path,
) -> Iterator[Callable[..., tuple[subprocess.CompletedProcess[str], dict[str, str]]]]:
    legs_running = [_job("select", "completed", "success"), _job("test (shard 1)", "in_progress")]
    legs_done = [
        _job("select", "completed", "success"),
        _job("report", "in_progress"),
        {**_job("test (shard 1)", "completed", "success"), "steps": LEG_STEPS["ok"]},
        {**_job("test (shard 2)", "completed", "failure"), "steps": LEG_STEPS["checkout"]},
    ]
    scripted = ScriptedJobs([legs_running, legs_running, legs_done])
    with FakeGitHub(routers=(scripted.router,)) as github:

        def wait(
            *args: str, token: str = "test-token", extra_env: dict[str, str] | None = None
        ) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
            output = tmp_path / "output.txt"
            output.write_text("")
            env = {
                **os.environ,
                "GITHUB_API_URL": github.url,
                "GITHUB_REPOSITORY": REPO,
                "GITHUB_RUN_ID": "77",
                "GITHUB_RUN_ATTEMPT": "1",
                "GITHUB_TOKEN": token,
                "GITHUB_OUTPUT": str(output),
                **(extra_env or {}),
            }
            result = subprocess.run(
                [sys.executable, "-m", "spyre_ci", "ci", "wait-for-jobs", *args],
                env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            return result, parse_github_output(output.read_text())

        yield wait


def test_waits_until_every_leg_finished_and_reports_the_matrix_result(run_wait: Any) -> None:
    matrix = json.dumps({"include": [{"shard": 1}, {"shard": 2}]})
    result, outputs = run_wait("--matrix", matrix, "--interval", "0.05", "--timeout", "30")
    assert result.returncode == 0, result.stderr
    assert outputs == {"result": "failure"}
    assert "2 `test` job(s) finished: failure" in result.stderr


def test_bad_token_fails_after_the_timeout_naming_the_permission(run_wait: Any) -> None:
    matrix = json.dumps({"include": [{"shard": 1}]})
    result, _ = run_wait("--matrix", matrix, "--interval", "0.05", "--timeout", "0.3", token="nope")
    assert result.returncode == 1
    assert "answered 401" in result.stderr and "actions: read" in result.stderr


def test_the_deadline_passing_after_an_api_error_still_reports_that_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whenever the deadline passes, a wait whose last listing failed names that failure."""

    def refused(*_: object) -> list[dict[str, Any]]:
        raise WaitFailed("listing the jobs of run 77 answered 401: (needs `actions: read`)")

    monkeypatch.setattr(jobs_wait, "_list_jobs", refused)
    ticks = itertools.count(step=0.2)  # each look at the clock: 0.2 s later
    with pytest.raises(WaitFailed, match="answered 401") as failed:
        wait_for_jobs(
            api_url="http://github.invalid",
            repo=REPO,
            run_id="77",
            attempt="1",
            token="nope",
            prefix="test",
            expected=1,
            timeout=0.3,
            sleep=lambda _: None,
            clock=lambda: next(ticks),
        )
    assert "actions: read" in str(failed.value)


def test_writes_the_legs_steps_and_reports_progress_to_the_relay(
    run_wait: Any, tmp_path: Path
) -> None:
    event = dispatch_event("pull_request", load_webhook("pull_request.opened"), "d-wait")
    (tmp_path / "event.json").write_text(json.dumps(event))
    matrix = json.dumps({"include": [{"shard": 1}, {"shard": 2}]})
    with loopback_server() as relay:
        env = {
            "GITHUB_EVENT_NAME": "repository_dispatch",
            "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
            "RUNNER_TEMP": str(tmp_path),
            "GITHUB_JOB": "report",
            "ACTIONS_ID_TOKEN_REQUEST_URL": relay.token_url,
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": REQUEST_TOKEN,
            "SPYRE_CI_CALLBACK_URL": relay.callback_url,
        }
        result, _ = run_wait(
            "--matrix", matrix, "--interval", "0.05", "--timeout", "30",
            "--steps-out", str(tmp_path / "steps.json"), "--report-progress", extra_env=env,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    steps = json.loads((tmp_path / "steps.json").read_text())
    assert steps[-2:] == [
        {"job": "test (shard 2)", "name": "Check out the upstream test files at the tested commit",
         "outcome": "failure"},
        {"job": "test (shard 2)", "name": "Run shard 2", "outcome": "skipped"},
    ]  # fmt: skip
    # once per change of the run's steps done/total: only the last listing has steps
    (progress,) = relay.callbacks
    assert progress["workflow"]["status"] == "in_progress"
    assert progress["progress"] == {"done": 5, "total": 5}
