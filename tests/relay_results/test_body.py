"""Validation of the CRCR callback body: errors name the field at fault."""

from __future__ import annotations

import json

import pytest

from relay.callbacks.body import BadCallback, parse_callback


def body(**workflow: object) -> dict:
    base = {
        "schema_version": "1",
        "status": "completed",
        "conclusion": "success",
        "name": "spyre-ci",
        "url": "https://github.com/acme/d/actions/runs/5",
        "run_id": 5,
        "run_attempt": 1,
        "job_name": "test (1/2)",
        "check_run_id": 77,
        "started_at": "2026-11-30T04:00:00Z",
        "completed_at": "2026-11-30T04:10:00Z",
        "test_results": {"passed": 8, "failed": 1, "skipped": 1, "total": 10},
    }
    base.update(workflow)
    return {"event_type": "pull_request", "delivery_id": "d-1", "payload": {}, "workflow": base}


def test_a_crcr_body_parses_and_keeps_unknown_keys() -> None:
    raw = body()
    raw["future_key"] = 1
    parsed = parse_callback(json.dumps(raw).encode())
    assert parsed.workflow.test_results is not None and parsed.workflow.test_results.total == 10
    assert parsed.model_extra == {"future_key": 1}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schema_version": "2"}, "workflow.schema_version"),
        ({"status": "queued"}, "workflow.status"),
        ({"conclusion": None}, "conclusion must be one of"),
        ({"test_results": {"passed": -1, "failed": 0, "skipped": 0, "total": -1}}, "passed"),
        ({"test_results": {"passed": 1, "failed": 1, "skipped": 0, "total": 5}}, "must equal"),
        ({"run_id": "12 34"}, "workflow.run_id"),
        ({"started_at": "yesterday"}, "workflow.started_at"),
    ],
)
def test_invalid_bodies_name_the_field(change: dict, field: str) -> None:
    with pytest.raises(BadCallback, match=field):
        parse_callback(json.dumps(body(**change)).encode())


def test_non_json_body_is_refused() -> None:
    with pytest.raises(BadCallback, match="not JSON"):
        parse_callback(b"{nope")


def test_digest_distinguishes_reports_and_ignores_key_order() -> None:
    one = parse_callback(json.dumps(body()).encode())
    same = parse_callback(json.dumps(dict(reversed(list(body().items())))).encode())
    other = parse_callback(json.dumps(body(conclusion="failure")).encode())
    assert one.digest() == same.digest() != other.digest()


def test_empty_strings_from_shell_built_bodies_mean_unknown() -> None:
    raw = body(
        status="in_progress", conclusion="", check_run_id="", test_results={}, completed_at=""
    )
    raw["workflow"]["run_id"], raw["workflow"]["run_attempt"] = "123", "2"
    parsed = parse_callback(json.dumps(raw).encode())
    w = parsed.workflow
    # An empty check_run_id gets the action's own fallback, "<run_id>-<run_attempt>".
    assert (w.run_key, w.run_attempt, w.check_run_id, w.conclusion, w.test_results) == (
        123,
        2,
        "123-2",
        None,
        None,
    )
