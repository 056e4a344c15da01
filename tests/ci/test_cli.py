"""`spyre-ci ci plan|callback|report` as a workflow step runs them: a subprocess with
GitHub's environment variables, GITHUB_OUTPUT, and a loopback token/callback server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci.conftest import dispatch_event
from tests.ci.loopback import REQUEST_TOKEN, Loopback, loopback_server

Webhook = Callable[[str], dict[str, Any]]
PASSING = "<testsuite><testcase name='a'/><testcase name='b'/><testcase name='c'><skipped/></testcase></testsuite>"
FAILING = "<testsuite><testcase name='d'><failure message='x'/></testcase></testsuite>"


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as running:
        yield running


def _step(
    tmp_path: Path,
    server: Loopback,
    event: dict[str, Any],
    *args: str,
    event_name: str = "repository_dispatch",
) -> subprocess.CompletedProcess[str]:
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event))
    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "ibm/torch-spyre",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_RUN_ATTEMPT": "1",
        "GITHUB_WORKFLOW": "upstream-dispatch",
        "GITHUB_JOB": "report",
        "RUNNER_TEMP": str(tmp_path),
        "ACTIONS_ID_TOKEN_REQUEST_URL": server.token_url,
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": REQUEST_TOKEN,
        "SPYRE_CI_CALLBACK_URL": server.callback_url,
        "SPYRE_CI_CHECK_RUN_ID": "31337",
    }
    return subprocess.run(
        [sys.executable, "-m", "spyre_ci", "ci", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _outputs(tmp_path: Path) -> dict[str, str]:
    lines = (tmp_path / "output.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_plan_writes_github_output_and_the_plan_file(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.synchronize"), "del-1")
    result = _step(tmp_path, server, event, "plan", "--write", str(tmp_path / "sel" / "plan.json"))
    assert result.returncode == 0, result.stderr
    outputs = _outputs(tmp_path)
    assert outputs["run"] == "true" and outputs["pr_number"] == "2"
    assert outputs["head_sha"] == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
    assert json.loads((tmp_path / "sel" / "plan.json").read_text())["delivery_id"] == "del-1"
    assert "run: PR #2 synchronize" in result.stderr


def test_plan_of_a_bad_event_names_the_field_and_fails(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    result = _step(tmp_path, server, webhook("repository_dispatch"), "plan")
    assert result.returncode == 2  # bad input, as for every command
    assert "client_payload.event_type" in result.stderr


def test_an_event_or_plan_file_that_is_not_json_is_one_line_naming_its_line(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"event_type":\n  }\n')
    env = {"PATH": "/usr/bin:/bin", "GITHUB_EVENT_NAME": "repository_dispatch"}
    commands = (
        ["plan", "--event-path", str(bad)],
        ["checkout", "--plan", str(bad), "--dest", str(tmp_path / "src")],
    )
    for command in commands:
        result = subprocess.run(
            [sys.executable, "-m", "spyre_ci", "ci", *command],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [f"Error: {bad}:2:3: not JSON: Expecting value"]


def test_in_progress_then_completed_from_the_same_job(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.opened"), "del-2")
    started = _step(tmp_path, server, event, "callback", "--status", "in_progress")
    assert started.returncode == 0, started.stderr
    (tmp_path / "junit" / "shard-0").mkdir(parents=True)
    (tmp_path / "junit" / "shard-0" / "shard-0.xml").write_text(PASSING)
    (tmp_path / "junit" / "shard-1.xml").write_text(FAILING)
    needs = {
        "select": {"result": "success", "outputs": {"run": "true"}},
        "test": {"result": "failure"},
    }
    done = _step(
        tmp_path,
        server,
        event,
        "report",
        "--junit-dir",
        str(tmp_path / "junit"),
        "--needs",
        json.dumps(needs),
        "--artifact-url",
        "https://github.com/ibm/torch-spyre/actions/runs/4242/artifacts/9",
    )
    assert done.returncode == 0, done.stderr
    first, second = server.callbacks
    assert server.authorizations == ["Bearer jwt-for-pytorch-cross-repo-ci-relay"] * 2
    assert first["workflow"]["status"] == "in_progress" and first["workflow"]["conclusion"] is None
    assert second["workflow"]["status"] == "completed"
    assert second["workflow"]["conclusion"] == "failure"
    assert second["workflow"]["test_results"] == {
        "passed": 2,
        "failed": 1,
        "skipped": 1,
        "total": 4,
    }
    assert second["workflow"]["artifact_url"].endswith("/artifacts/9")
    for key in ("check_run_id", "job_name", "run_id", "run_attempt", "name", "url", "started_at"):
        assert first["workflow"][key] == second["workflow"][key], key
    assert first["workflow"]["check_run_id"] == "31337"
    assert first["workflow"]["url"] == "https://github.com/ibm/torch-spyre/actions/runs/4242"
    assert second["callback_token"] == "cbt-opaque" and second["delivery_id"] == "del-2"
    assert second["payload"] == event["client_payload"]["payload"]
    assert _outputs(tmp_path)["conclusion"] == "failure"


def test_closed_unmerged_pr_reports_skipped(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.closed"))
    assert _step(tmp_path, server, event, "callback", "--status", "in_progress").returncode == 0
    needs = {"select": {"result": "success"}, "test": {"result": "skipped"}}
    done = _step(tmp_path, server, event, "report", "--needs", json.dumps(needs))
    assert done.returncode == 0, done.stderr
    completed = server.callbacks[-1]["workflow"]
    assert completed["conclusion"] == "skipped"
    assert "test_results" not in completed


def test_nightly_reports_once_with_the_upstream_sha(tmp_path: Path, server: Loopback) -> None:
    event = {"schedule": "17 3 * * *"}
    started = _step(
        tmp_path, server, event, "callback", "--status", "in_progress", event_name="schedule"
    )
    assert started.returncode == 0 and not server.callbacks
    done = _step(
        tmp_path, server, event, "report", "--upstream-sha", "c" * 40, event_name="schedule"
    )
    assert done.returncode == 0, done.stderr
    (only,) = server.callbacks
    assert (only["event_type"], only["delivery_id"]) == ("nightly", "c" * 40)


def test_refused_callback_fails_the_step_with_the_relays_answer(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    server.script = [(403, {}, '{"detail": "callback token is for another repository"}')]
    event = dispatch_event("push", webhook("push.with-new-branch"))
    result = _step(tmp_path, server, event, "callback", "--status", "in_progress")
    assert result.returncode == 1
    assert "HTTP 403" in result.stderr and "another repository" in result.stderr


def test_report_sends_in_progress_first_when_it_was_never_acknowledged(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.opened"), "d-retry")
    server.script = [(400, {}, '{"error": "try later"}')]
    assert _step(tmp_path, server, event, "callback", "--status", "in_progress").returncode == 1
    done = _step(tmp_path, server, event, "report", "--needs", "{}")
    assert done.returncode == 0, done.stderr
    assert "in_progress was not acknowledged" in done.stderr
    statuses = [c["workflow"]["status"] for c in server.callbacks]
    assert statuses == ["in_progress", "in_progress", "completed"]
    # the resent in_progress is the one that was refused, byte for byte (same start time)
    assert server.callbacks[0] == server.callbacks[1]


FAILING_PYTEST = (
    "<testsuites><testsuite>"
    "<testcase classname='test.test_ops.TestOpsSPYRE' name='test_add_spyre_float16' time='0.5'>"
    "<failure message='AssertionError: Tensor-likes are not close!'>E   AssertionError"
    "\n\ntest/test_ops.py:21: AssertionError</failure></testcase>"
    "<testcase classname='test.test_ops.TestOpsSPYRE' name='test_mul_spyre_float16'/>"
    "</testsuite></testsuites>"
)


def test_report_sends_the_failed_tests_steps_log_tail_and_their_causes(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.opened"), "d-tests")
    assert _step(tmp_path, server, event, "callback", "--status", "in_progress").returncode == 0
    junit = tmp_path / "junit"
    junit.mkdir()
    (junit / "shard-1.xml").write_text(FAILING_PYTEST)
    (junit / "shard-1.log").write_text("collected 2 items\n" + "E   AssertionError\n" * 3)
    failed_id = "test/test_ops.py::TestOpsSPYRE::test_add_spyre_float16"
    selection = tmp_path / "selection"
    selection.mkdir()
    causes = [
        {"stage": "detect", "kind": "helper", "summary": "test/test_ops.py: reference_add modified"},
        {"stage": "map", "kind": "helper", "summary": "template TestOps.test_add uses it",
         "evidence": {"calls": ["reference_add"]}},
    ]  # fmt: skip
    (selection / "selection.json").write_text(
        json.dumps({"selected": [{"id": failed_id, "causes": causes}], "summary": {"selected": 1}})
    )
    steps = [{"job": "test (shard 1)", "name": "Run shard 1", "outcome": "failure"}]
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    done = _step(
        tmp_path, server, event, "report", "--junit-dir", str(junit),
        "--needs", json.dumps({"select": {"result": "success"}}), "--job-result", "test=failure",
        "--selection-dir", str(selection), "--steps-file", str(tmp_path / "steps.json"),
        "--step", "select/checkout=success", "--step", "select/select=",  # empty: did not run
        "--junit-url", "https://github.com/ibm/torch-spyre/actions/runs/4242#artifacts",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    completed = server.callbacks[-1]
    report = completed["run_report"]
    assert [(s["job"], s["name"], s["kind"], s["outcome"]) for s in report["steps"]] == [
        ("test (shard 1)", "Run shard 1", "test", "failure"),
        ("select", "checkout", "checkout", "success"),
    ]
    (failure,) = report["tests"]["failures"]
    assert failure["id"] == failed_id and failure["message"].startswith("AssertionError: Tensor")
    assert failure["location"] == "test/test_ops.py:21: AssertionError"
    assert report["tests"]["results"] == {
        "passed": ["test/test_ops.py::TestOpsSPYRE::test_mul_spyre_float16"]
    }
    assert report["tests"]["junit_url"].endswith("/4242#artifacts")
    assert report["legs"][0]["name"] == "test (shard 1)"
    assert report["log_tail"]["step"] == "test (shard 1) / test"
    assert "E   AssertionError" in report["log_tail"]["text"]
    # the failed test's cause chain rides with the selection summary (the suspect change)
    chain = completed["selection"]["summary"]["causes_by_test"][failed_id]
    assert chain[0]["summary"] == "test/test_ops.py: reference_add modified"
    assert json.loads(chain[1]["evidence"]) == {"calls": ["reference_add"]}
    assert completed["workflow"]["test_results"]["failed"] == 1  # CRCR's counts, unchanged


def test_progress_repeats_in_progress_with_the_same_start(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    event = dispatch_event("pull_request", webhook("pull_request.opened"), "d-progress")
    assert _step(tmp_path, server, event, "callback", "--status", "in_progress").returncode == 0
    again = _step(
        tmp_path, server, event, "callback", "--status", "in_progress",
        "--progress", "3/8", "--current-step", "test-1-checkout",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    first, second = server.callbacks
    assert second["workflow"] == first["workflow"]  # the same report, only further on
    assert second["progress"] == {"done": 3, "total": 8, "step": "test-1-checkout"}
    bad = _step(tmp_path, server, event, "callback", "--status", "in_progress", "--progress", "9/8")
    assert bad.returncode == 2 and "--progress" in bad.stderr
