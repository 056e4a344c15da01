"""`run_report`: what the completed callback says beyond CRCR's counts, and its bounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from spyre_ci.ci import run_report as rr
from spyre_ci.ci.junit import CaseResult
from spyre_ci.ci.run_report import Step, build_tests, legs, log_tail, parse_step, step_kind

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "upstream-dispatch.yml"


def _case(i: int, outcome: str = "passed", shard: str = "1", **kw: object) -> CaseResult:
    return CaseResult(f"test/test_x.py::TestXSPYRE::test_{i:05d}", outcome, shard=shard, **kw)  # type: ignore[arg-type]


def test_failures_carry_message_location_duration_and_shard() -> None:
    detail = "    def test_add(...):\nE   AssertionError: Tensor-likes are not close!\n\ntest/test_x.py:21: AssertionError"
    failing = _case(
        1,
        "failed",
        "2",
        message="AssertionError: Tensor-likes are not close!",
        detail=detail,
        duration=0.1234,
    )
    errored = _case(
        2, "error", detail="E   RuntimeError: setup failed\n\nconftest.py:3: RuntimeError"
    )
    tests = build_tests([_case(0), failing, errored, _case(3, "xfailed"), _case(4, "skipped")])
    assert tests["outcomes"] == {"passed": 1, "failed": 1, "error": 1, "skipped": 1, "xfailed": 1}
    first, second = tests["failures"]
    assert first == {
        "id": failing.node_id,
        "outcome": "failed",
        "message": "AssertionError: Tensor-likes are not close!",
        "location": "test/test_x.py:21: AssertionError",
        "duration": 0.123,
        "shard": "2",
    }
    assert second["message"] == "RuntimeError: setup failed"  # no message attribute: the E lines
    assert tests["results"] == {
        "passed": [_case(0).node_id],
        "xfailed": [_case(3).node_id],
        "skipped": [_case(4).node_id],
    }
    assert tests["truncated"] == {"failures": 0, "results": 0, "messages": 0}


def test_large_results_are_cut_with_a_marker_and_stay_bounded() -> None:
    many = [_case(i, "failed", message="x" * 5000) for i in range(rr.MAX_FAILURES + 7)]
    passed = [_case(10_000 + i) for i in range(30_000)]
    tests = build_tests(
        [*many, *passed], junit_url="https://github.com/a/b/actions/runs/1#artifacts"
    )
    assert len(tests["failures"]) == rr.MAX_FAILURES
    message = tests["failures"][0]["message"]
    assert len(message) == rr.MAX_MESSAGE_CHARS and message.endswith(
        "more characters in the JUnit artifact]"
    )
    listed = len(tests["results"]["passed"])
    assert tests["truncated"] == {
        "failures": 7,
        "results": 30_000 - listed,
        "messages": rr.MAX_FAILURES,
    }
    assert 0 < listed < 30_000
    assert len(json.dumps(tests)) <= rr.MAX_LISTED_BYTES + 64 * 1024
    assert tests["junit_url"].endswith("#artifacts")


def test_legs_are_one_per_shard_with_their_own_counts() -> None:
    cases = [_case(0, shard="1"), _case(1, "failed", shard="2"), _case(2, shard="2")]
    steps = [Step("test (shard 3)", "checkout", "checkout", "failure")]
    assert legs(cases, steps) == [
        {"name": "test (shard 1)", "conclusion": "success", "tests": {"passed": 1, "failed": 0, "skipped": 0, "total": 1}},
        {"name": "test (shard 2)", "conclusion": "failure", "tests": {"passed": 1, "failed": 1, "skipped": 0, "total": 2}},
        {"name": "test (shard 3)", "conclusion": "failure", "tests": {"passed": 0, "failed": 0, "skipped": 0, "total": 0}},
    ]  # fmt: skip


def test_log_tail_keeps_the_last_lines() -> None:
    text = "\n".join(f"line {i}" for i in range(500)) + "\n"
    tail = log_tail(text, "select / checkout")
    assert tail["text"].splitlines() == [f"line {i}" for i in range(440, 500)]
    assert tail == {**tail, "step": "select / checkout", "truncated": True}


def test_every_step_of_the_workflow_has_a_kind() -> None:
    """The relay tells infrastructure from tests by step kind: no workflow step is `other`."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    for job_id, job in workflow["jobs"].items():
        for step in job["steps"]:
            name = step.get("name") or f"Run {step['uses']}"
            assert step_kind(name) != "other", (job_id, name)
    assert step_kind("Check out the upstream test files at the tested commit") == "checkout"
    assert step_kind("Run actions/checkout@v4") == "setup"
    assert step_kind("Run shard 2") == "test"
    assert step_kind("Select the tests the change affects") == "select"
    assert step_kind("Wait for the test jobs") == "report"


def test_step_pairs_from_the_report_step() -> None:
    assert parse_step("select/checkout=failure") == Step(
        "select", "checkout", "checkout", "failure"
    )
    assert parse_step("test (shard 1)/Run shard 1=startup_failure").outcome == "failure"
    with pytest.raises(ValueError, match="JOB/STEP=OUTCOME"):
        parse_step("checkout")
