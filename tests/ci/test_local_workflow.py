"""`spyre-ci ci run-workflow`: the workflow's jobs, step by step, on this machine."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spyre_ci.ci.demo import build_demo_upstream
from spyre_ci.ci.local_workflow import LocalRun, parse_github_output, run_local_workflow
from tests.ci.conftest import dispatch_event
from tests.ci.loopback import REQUEST_TOKEN, loopback_server


def test_github_output_with_heredoc_values() -> None:
    text = 'run=true\nmatrix<<EOF_1\n{"include": [\n{"shard": 0}]}\nEOF_1\nreason=a=b\n'
    assert parse_github_output(text) == {
        "run": "true",
        "matrix": '{"include": [\n{"shard": 0}]}',
        "reason": "a=b",
    }


def test_skipped_plan_runs_only_plan_and_the_report_job(
    tmp_path: Path, webhook: Callable[[str], dict[str, Any]]
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.closed"), "d-closed")
    with loopback_server() as server:
        run = LocalRun(
            event_name="repository_dispatch",
            event=event,
            workdir=tmp_path / "run",
            upstream_url=str(tmp_path / "unused"),
            repository="acme/torch-spyre",
            server_url="https://github.com",
            run_id="555",
            extra_env={
                "ACTIONS_ID_TOKEN_REQUEST_URL": server.token_url,
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": REQUEST_TOKEN,
                "SPYRE_CI_CALLBACK_URL": server.callback_url,
            },
        )
        result = run_local_workflow(run)
    assert [step.job for step in result.steps] == [
        "select-claim",
        "select-plan",
        "report-callback",
        "report-report",
    ]
    assert all(step.returncode == 0 for step in result.steps)
    assert (result.jobs["select"].result, result.jobs["test"].result) == ("success", "skipped")
    assert result.conclusion == "skipped"
    assert server.paths == ["/github/claim", "/github/callback", "/github/callback"]
    _, started, completed = server.callbacks
    assert started["workflow"]["url"] == "https://github.com/acme/torch-spyre/actions/runs/555"
    assert started["workflow"]["check_run_id"] == completed["workflow"]["check_run_id"] == "555-1"
    assert completed["workflow"]["conclusion"] == "skipped"
    assert completed["delivery_id"] == "d-closed"
    plan = json.loads((tmp_path / "run" / "selection" / "plan.json").read_text())
    assert plan["reason"] == "PR #2 was closed without being merged"


def test_unknown_upstream_sha_fails_in_checkout_and_reports_its_steps_and_log(
    tmp_path: Path, webhook: Callable[[str], dict[str, Any]]
) -> None:
    demo = build_demo_upstream(tmp_path / "demo")
    push = webhook("push")
    push.update(
        ref="refs/heads/main", before=demo.main_sha, after="f" * 40, deleted=False, created=False
    )
    event = dispatch_event("push", push, "d-unknown-sha")
    with loopback_server() as server:
        run = LocalRun(
            event_name="repository_dispatch", event=event, workdir=tmp_path / "run",
            upstream_url=str(demo.path), repository="acme/torch-spyre", run_id="556",
            extra_env={
                "ACTIONS_ID_TOKEN_REQUEST_URL": server.token_url,
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": REQUEST_TOKEN,
                "SPYRE_CI_CALLBACK_URL": server.callback_url,
            },
        )  # fmt: skip
        result = run_local_workflow(run)
    assert [(s.job, s.returncode != 0) for s in result.steps] == [
        ("select-claim", False), ("select-plan", False), ("select-checkout", True),
        ("report-callback", False), ("report-report", False),
    ]  # fmt: skip
    completed = server.callbacks[-1]
    assert completed["workflow"]["conclusion"] == "failure"
    report = completed["run_report"]
    assert [(s["job"], s["name"], s["kind"], s["outcome"]) for s in report["steps"]] == [
        ("select", "claim", "plan", "success"),
        ("select", "plan", "plan", "success"),
        ("select", "checkout", "checkout", "failure"),
        ("report", "callback", "report", "success"),
    ]
    assert "tests" not in report  # no test ran
    assert report["log_tail"]["step"] == "select / checkout"
    assert "f" * 12 in report["log_tail"]["text"]  # git names the commit it could not find


def test_a_run_told_duplicate_at_its_claim_plans_tests_and_reports_nothing(
    tmp_path: Path, webhook: Callable[[str], dict[str, Any]]
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.opened"), "d-twice")
    with loopback_server() as server:
        server.script = [(200, {}, json.dumps({"status": "duplicate", "reason": "run 1 owns it"}))]
        run = LocalRun(
            event_name="repository_dispatch",
            event=event,
            workdir=tmp_path / "run",
            upstream_url=str(tmp_path / "unused"),
            extra_env={
                "ACTIONS_ID_TOKEN_REQUEST_URL": server.token_url,
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": REQUEST_TOKEN,
                "SPYRE_CI_CALLBACK_URL": server.callback_url,
            },
        )
        result = run_local_workflow(run)
    assert [step.job for step in result.steps] == ["select-claim"]
    assert server.paths == ["/github/claim"]  # no callback: the owner's result counts
    assert result.jobs["select"].outputs["duplicate"] == "true"
    assert (result.jobs["test"].result, result.jobs["report"].result) == ("skipped", "skipped")
