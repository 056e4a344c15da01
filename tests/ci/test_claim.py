"""`spyre-ci ci claim`, the select job's first step, as a workflow step runs it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from spyre_ci.ci.callback import WorkflowRun
from spyre_ci.ci.claim import build_claim_body, claim_url, interpret
from tests.ci.conftest import dispatch_event, load_webhook
from tests.ci.loopback import Loopback, loopback_server
from tests.ci.test_cli import Webhook, _outputs, _step

CLAIMED = json.dumps({"ok": True, "status": "claimed", "run_id": 4242, "run_attempt": 1})
DUPLICATE = json.dumps(
    {"ok": True, "status": "duplicate", "reason": "delivery d-1 to x/y belongs to run 1"}
)


@pytest.fixture
def server() -> Iterator[Loopback]:
    with loopback_server() as running:
        yield running


def test_the_claim_goes_next_to_the_callback_with_the_run_and_the_echoed_token(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    server.script = [(200, {}, CLAIMED)]
    event = dispatch_event("pull_request", webhook("pull_request.opened"), "d-1")
    result = _step(tmp_path, server, event, "claim")
    assert result.returncode == 0, result.stderr
    assert server.paths == ["/github/claim"]
    [body] = server.callbacks
    assert body["callback_token"] == "cbt-opaque" and body["delivery_id"] == "d-1"
    assert body["workflow"] == {
        "schema_version": "1",
        "name": "upstream-dispatch",
        "run_id": "4242",
        "run_attempt": "1",
        "job_name": "report",
    }
    assert _outputs(tmp_path) == {
        "claimed": "true",
        "duplicate": "false",
        "claim_reason": "claimed for run 4242 attempt 1",
    }


def test_a_duplicate_run_is_told_so_and_the_step_succeeds(
    tmp_path: Path, server: Loopback, webhook: Webhook
) -> None:
    server.script = [
        (503, {"Retry-After": "1"}, '{"error": "being recorded"}'),
        (200, {}, DUPLICATE),
    ]
    event = dispatch_event("pull_request", webhook("pull_request.opened"))
    result = _step(tmp_path, server, event, "claim")
    assert result.returncode == 0, result.stderr
    assert len(server.callbacks) == 2  # the 503 (dispatch still being recorded) was retried
    assert _outputs(tmp_path)["duplicate"] == "true"
    assert "::notice title=Duplicate dispatch::duplicate: delivery d-1" in result.stdout


@pytest.mark.parametrize(
    ("status", "answer", "returncode", "duplicate"),
    [
        (404, '{"detail": "Not Found"}', 0, "false"),  # CRCR's relay: no claims, go on
        (403, '{"error": "callback_token does not match"}', 1, None),
    ],
)
def test_a_relay_without_claims_lets_the_run_go_on_and_a_refusal_fails_the_step(
    tmp_path: Path,
    server: Loopback,
    webhook: Webhook,
    status: int,
    answer: str,
    returncode: int,
    duplicate: str | None,
) -> None:
    server.script = [(status, {}, answer)]
    event = dispatch_event("pull_request", webhook("pull_request.opened"))
    result = _step(tmp_path, server, event, "claim")
    assert result.returncode == returncode, result.stderr
    if duplicate is None:
        assert "HTTP 403" in result.stderr and "callback_token does not match" in result.stderr
    else:
        assert _outputs(tmp_path)["duplicate"] == duplicate


def test_a_run_that_is_not_a_dispatch_has_nothing_to_claim(
    tmp_path: Path, server: Loopback
) -> None:
    result = _step(tmp_path, server, {"schedule": "17 3 * * *"}, "claim", event_name="schedule")
    assert result.returncode == 0, result.stderr
    assert server.callbacks == [] and _outputs(tmp_path)["duplicate"] == "false"


def test_claim_url_and_body_and_answers() -> None:
    assert (
        claim_url("https://relay.example/github/callback") == "https://relay.example/github/claim"
    )
    assert claim_url("https://relay.example/") == "https://relay.example/github/claim"
    run = WorkflowRun("wf", "u", run_id="9", run_attempt="2", job_name="select")
    body = build_claim_body({"delivery_id": "d", "workflow": "old", "callback_token": "t"}, run)
    assert body["workflow"]["run_attempt"] == "2" and body["callback_token"] == "t"
    assert interpret(200, '{"status": "ignored", "reason": "L1"}').duplicate is False
    assert interpret(200, "not json").duplicate is False
    assert load_webhook("push")  # the shared fixtures are there
