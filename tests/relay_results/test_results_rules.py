"""The pure rules of per-test results: failure kinds, histories, suspect ranges, suspects."""

from __future__ import annotations

import json

import pytest

from relay.results import history
from relay.results.classify import Classification, StepOutcome, classify, swept_kind
from relay.results.suspects import causes_by_test, selection_range, suspect_change


def _step(job: str, name: str, kind: str, outcome: str) -> StepOutcome:
    return StepOutcome(job, name, kind, outcome)


CHECKOUT_FAILED = [
    _step("select", "plan", "plan", "success"),
    _step("select", "checkout", "checkout", "failure"),
]
TESTS_FAILED = [_step("test (shard 1)", "test", "test", "failure")]


@pytest.mark.parametrize(
    ("conclusion", "steps", "failed", "total", "expected"),
    [
        ("success", [], 0, 10, Classification(None)),
        ("skipped", [], 0, None, Classification(None)),
        ("cancelled", TESTS_FAILED, 3, 10, Classification("cancelled")),
        ("timed_out", [], 0, None, Classification("timeout")),
        ("failure", TESTS_FAILED, 2, 10, Classification("test")),
        # tests failed and a leg's checkout too: the failing tests are what to act on
        ("failure", [*CHECKOUT_FAILED, *TESTS_FAILED], 2, 10, Classification("test")),
        ("failure", CHECKOUT_FAILED, 0, None, Classification("infrastructure", "select / checkout")),
        ("failure", TESTS_FAILED, 0, 0,
         Classification("infrastructure", "test (shard 1) / test (runner, no failing test)")),
        ("failure", [_step("select", "plan", "plan", "success")], 0, 0,
         Classification("infrastructure", "no test ran")),
        ("failure", [_step("report", "wait", "report", "timed_out")], 0, None,
         Classification("timeout", "report / wait")),
        # a CRCR-only downstream reports no steps: a failure stays a failure, as before
        ("failure", [], 0, None, Classification("unclassified")),
        ("failure", [], 0, 0, Classification("unclassified")),
        ("failure", [], 4, 10, Classification("test")),
    ],
)  # fmt: skip
def test_failure_kinds(
    conclusion: str,
    steps: list[StepOutcome],
    failed: int,
    total: int | None,
    expected: Classification,
) -> None:
    assert classify(conclusion, steps, failed, total) == expected


def test_the_relays_own_verdicts() -> None:
    assert swept_kind("timed_out").kind == "timeout"
    assert swept_kind("failure") == Classification(
        "infrastructure", "runner: the run ended without reporting"
    )


def _e(at: float, outcome: str, sha: str, delivery: str, attempt: int = 1) -> history.Entry:
    return history.entry(at, outcome, sha, delivery, attempt)


def test_history_is_newest_first_bounded_and_replaces_a_repeat() -> None:
    kept: list[history.Entry] = []
    for n in range(5):
        kept = history.add(kept, _e(100 + n, "passed", f"{n:012x}", f"d{n}"), 3, None).history
    assert [e.delivery_id for e in kept] == ["d4", "d3", "d2"]
    late = history.add(kept, _e(50, "failed", "old", "d-old"), 3, None).history  # out of order
    assert [e.delivery_id for e in late] == ["d4", "d3", "d2"]
    again = history.add(kept, _e(104, "failed", f"{4:012x}", "d4"), 3, None)
    assert [e.code for e in again.history] == ["f", "p", "p"]  # the same delivery: replaced
    assert history.decode(history.encode(again.history)) == again.history
    assert history.decode("not json") == [] and history.decode('[["x"]]') == []


def test_suspect_range_is_last_pass_to_first_failure_of_the_streak() -> None:
    kept: list[history.Entry] = []
    for at, outcome, sha in [(1, "passed", "aaa"), (2, "passed", "bbb"), (3, "failed", "ccc"),
                             (4, "error", "ddd")]:  # fmt: skip
        kept = history.add(kept, _e(at, outcome, sha, sha), 10, None).history
    found = history.suspect(kept)
    assert found is not None
    assert found.as_dict()["range"] == "bbb..ccc" and found.streak == 2
    assert found.failing_since.delivery_id == "ccc"
    passing_again = history.add(kept, _e(5, "passed", "eee", "eee"), 10, None).history
    assert history.suspect(passing_again) is None
    # never seen passing within the kept history: the newest pass recorded apart
    failures = [_e(9, "failed", "zzz", "z"), _e(8, "failed", "yyy", "y")]
    assert history.suspect(failures) is not None
    assert history.suspect(failures).good is None  # type: ignore[union-attr]
    older_pass = _e(1, "passed", "abc", "a")
    assert history.suspect(failures, older_pass).as_dict()["range"] == "abc..yyy"  # type: ignore[union-attr]


def test_pass_and_fail_on_one_sha_is_flaky() -> None:
    sha = "c0ffee" * 6 + "abcd"
    first = history.add([], _e(10, "failed", sha, "d", 1), 10, None)
    assert not first.flaky
    rerun = history.add(first.history, _e(10, "passed", sha, "d", 2), 10, None)
    assert rerun.flaky and [e.attempt for e in rerun.history] == [2, 1]
    other_sha = history.add(first.history, _e(11, "passed", "beef", "d2"), 10, None)
    assert not other_sha.flaky
    # the pass fell out of the kept history, but the newest pass is kept apart
    assert history.add([], _e(12, "failed", sha, "d3"), 10, sha[:12]).flaky


def test_suspect_change_from_the_cause_chain_read_defensively() -> None:
    test_id = "test/test_demo_ops.py::TestDemoOpsSPYRE::test_add_spyre_float16"
    chain = [
        {"stage": "detect", "kind": "helper", "summary": "test/test_demo_ops.py: reference_add modified"},
        {"stage": "map", "kind": "helper", "summary": "template TestDemoOps.test_add uses it",
         "evidence": "calls reference_add"},
        {"stage": "scope", "kind": "manifest", "summary": "reused as mandatory_success"},
    ]  # fmt: skip
    summary = json.dumps({"causes_by_test": {test_id: chain}, "base": "a" * 40, "head": "b" * 40})
    change = suspect_change(causes_by_test(summary)[test_id])
    assert change is not None
    assert (change["change"], change["via"], change["evidence"]) == (
        "test/test_demo_ops.py: reference_add modified",
        "template TestDemoOps.test_add uses it",
        "calls reference_add",
    )
    assert selection_range(summary) == ("a" * 40, "b" * 40)
    for odd in (None, "", "[]", '{"causes_by_test": []}', '{"causes_by_test": {"x": 3}}'):
        found = causes_by_test(odd)
        assert suspect_change(found.get(test_id)) is None
    assert suspect_change([{"stage": "map"}]) is None
    assert selection_range('{"base": "not a sha"}') == (None, None)


def test_check_run_summary_names_the_failed_tests_and_an_infrastructure_failure() -> None:
    from relay.checks import MAX_SUMMARY, check_run_request

    report = {"tests": {"failures": [{"id": "test/t.py::T::test_a", "message": "AssertionError: x\nmore"}] * 3000,
                        "failures_listed": 3000}}  # fmt: skip
    row = {
        "repo": "acme/l4", "workflow_name": "ci", "job_name": "report", "run_id": 7, "pr_number": 2,
        "status": "completed", "conclusion": "failure", "tests_total": 3000, "tests_passed": 0,
        "tests_failed": 3000, "tests_skipped": 0, "last_payload": json.dumps({"run_report": report}),
    }  # fmt: skip
    summary = check_run_request(row, "a" * 40, "http://relay/x")["output"]["summary"]
    assert "Failed tests (3000, the first 3000 here):" in summary
    assert "- `test/t.py::T::test_a`: AssertionError: x" in summary and "more" not in summary
    assert len(summary) <= MAX_SUMMARY  # GitHub's limit
    infra = {**row, "failure_kind": "infrastructure", "failure_step": "select / checkout",
             "last_payload": "{}"}  # fmt: skip
    text = check_run_request(infra, "a" * 40, "http://relay/x")["output"]["summary"]
    assert "Infrastructure failure (select / checkout): not a test regression." in text
