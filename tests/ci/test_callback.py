"""The CRCR callback body and the run's conclusion."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from spyre_ci.ci.callback import (
    BadCallback,
    WorkflowRun,
    build_callback_body,
    conclusion_for,
    self_reported_payload,
)
from tests.ci.conftest import dispatch_event

RUN = WorkflowRun(
    name="upstream-dispatch",
    url="https://github.com/ibm/torch-spyre/actions/runs/77",
    run_id="77",
    run_attempt="2",
    job_name="report",
    check_run_id="555",
)
T0 = datetime(2026, 11, 30, 4, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 30, 4, 9, 30, tzinfo=UTC)


def test_completed_body_echoes_the_client_payload_and_adds_workflow(
    webhook: Callable[[str], dict[str, Any]],
) -> None:
    client_payload = dispatch_event("pull_request", webhook("pull_request.opened"))[
        "client_payload"
    ]
    body = build_callback_body(
        client_payload,
        RUN,
        status="completed",
        started_at=T0,
        completed_at=T1,
        conclusion="failure",
        test_results={"passed": 5, "failed": 1, "skipped": 0, "total": 6},
        artifact_url="https://github.com/ibm/torch-spyre/actions/runs/77/artifacts/1",
    )
    assert {k: v for k, v in body.items() if k != "workflow"} == client_payload
    assert body["callback_token"] == "cbt-opaque"
    assert body["workflow"] == {
        "schema_version": "1",
        "status": "completed",
        "conclusion": "failure",
        "name": "upstream-dispatch",
        "url": "https://github.com/ibm/torch-spyre/actions/runs/77",
        "run_id": "77",
        "run_attempt": "2",
        "job_name": "report",
        "check_run_id": "555",
        "started_at": "2026-11-30T04:00:00Z",
        "completed_at": "2026-11-30T04:09:30Z",
        "test_results": {"passed": 5, "failed": 1, "skipped": 0, "total": 6},
        "artifact_url": "https://github.com/ibm/torch-spyre/actions/runs/77/artifacts/1",
    }


def test_in_progress_body_has_no_conclusion_and_falls_back_for_check_run_id() -> None:
    run = WorkflowRun("wf", "u", run_id="9", run_attempt="1", job_name="report")
    body = build_callback_body(
        {"event_type": "push", "delivery_id": "d", "payload": {}},
        run,
        status="in_progress",
        started_at=T0,
        conclusion="success",
    )
    assert body["workflow"]["conclusion"] is None
    assert body["workflow"]["completed_at"] is None
    assert body["workflow"]["check_run_id"] == "9-1"  # the shipped action's fallback
    other = WorkflowRun("wf", "u", run_id="local-abc", run_attempt="2", job_name="report")
    assert other.effective_check_run_id() == "local-abc-2"


def test_invalid_callbacks_are_refused() -> None:
    payload = {"event_type": "push", "delivery_id": "d", "payload": {}}
    with pytest.raises(BadCallback, match="status 'queued'"):
        build_callback_body(payload, RUN, status="queued", started_at=T0)
    with pytest.raises(BadCallback, match="needs a conclusion"):
        build_callback_body(payload, RUN, status="completed", started_at=T0)
    nightly = self_reported_payload("nightly", "f" * 40, "pytorch/pytorch")
    with pytest.raises(BadCallback, match="one completed callback"):
        build_callback_body(nightly, RUN, status="in_progress", started_at=T0)


def test_nightly_payload_uses_the_upstream_sha_as_delivery_id() -> None:
    payload = self_reported_payload("nightly", "f" * 40, "pytorch/pytorch")
    assert payload["delivery_id"] == "f" * 40 and payload["event_type"] == "nightly"
    with pytest.raises(BadCallback, match="needs the tested upstream SHA"):
        self_reported_payload("nightly", "", "pytorch/pytorch")


@pytest.mark.parametrize(
    ("planned", "results", "failed", "expected"),
    [
        (False, {"select": "success", "test": "skipped"}, 0, "skipped"),
        (True, {"select": "success", "test": "success"}, 0, "success"),
        (True, {"select": "success", "test": "skipped"}, 0, "success"),  # nothing selected
        (True, {"select": "success", "test": "success"}, 2, "failure"),
        (True, {"select": "failure", "test": "skipped"}, 0, "failure"),
        (True, {"select": "success", "test": "failure"}, 0, "failure"),
        (True, {"select": "success", "test": "cancelled"}, 1, "cancelled"),
    ],
)
def test_conclusion(planned: bool, results: dict[str, str], failed: int, expected: str) -> None:
    assert conclusion_for(planned_run=planned, job_results=results, tests_failed=failed) == expected
