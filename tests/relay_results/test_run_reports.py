"""Per-test results through the real callback endpoint: kinds, failed tests, histories,
flaky re-runs, progress, and the CRCR-only downstream that sends none of it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.results import history
from tests.support.fake_github import FakeGitHub
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop, fixture_payload

REPO = "acme/l2"
TEST_A = "test/test_ops.py::TestOpsSPYRE::test_add_spyre_float16"
TEST_B = "test/test_ops.py::TestOpsSPYRE::test_mul_spyre_float16"
TEST_C = "test/test_ops.py::TestOpsSPYRE::test_sum_spyre_float32"
SHA_1, SHA_2 = "1" * 40, "2" * 40
TESTS_FAILED_STEPS = [
    {"job": "select", "name": "checkout", "kind": "checkout", "outcome": "success"},
    {"job": "test (shard 1)", "name": "test", "kind": "test", "outcome": "failure"},
]


def run_report(
    failures: list[str], passed: list[str], steps: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    return {
        "schema_version": "1",
        "steps": TESTS_FAILED_STEPS if steps is None else steps,
        "tests": {
            "outcomes": {"passed": len(passed), "failed": len(failures)},
            "failures": [
                {
                    "id": t,
                    "outcome": "failed",
                    "message": f"AssertionError in {t}",
                    "duration": 0.5,
                    "shard": "1",
                    "location": "test/test_ops.py:21: AssertionError",
                }
                for t in failures
            ],
            "results": {"passed": passed},
            "truncated": {"failures": 0, "results": 0, "messages": 0},
        },
        "legs": [{"name": "test (shard 1)", "conclusion": "failure" if failures else "success"}],
        "log_tail": {
            "step": "test (shard 1) / test",
            "text": "E   AssertionError",
            "truncated": False,
        },
    }


def _pr_at(loop: ResultsLoop, sha: str, number: int = 2) -> dict[str, Any]:
    pr = fixture_payload("pull_request.opened")
    pr["pull_request"]["head"]["sha"] = sha
    pr["number"] = pr["pull_request"]["number"] = number
    return loop.open_pr(REPO, pr)


def _completed(
    loop: ResultsLoop, payload: dict[str, Any], report: dict[str, Any] | None, **workflow: Any
) -> httpx.Response:
    tests = report.get("tests") if report else None
    counts = (
        {"passed": len(tests["results"]["passed"]), "failed": len(tests["failures"]), "skipped": 0}
        if tests
        else {"passed": 0, "failed": 0, "skipped": 0}
    )
    failed = bool(tests and tests["failures"]) or workflow.pop("failed", False)
    return loop.callback(
        REPO, payload, status="completed", conclusion="failure" if failed else "success",
        test_results=counts, extra={"run_report": report} if report else None, **workflow,
    )  # fmt: skip


def _job(loop: ResultsLoop, delivery: str, attempt: int = 1) -> dict[str, Any]:
    (row,) = loop.rows(
        "SELECT * FROM job_runs WHERE delivery_id = ? AND run_attempt = ?", (delivery, attempt)
    )
    return row


def _status(loop: ResultsLoop, test_id: str) -> dict[str, Any]:
    (row,) = loop.rows("SELECT * FROM test_status WHERE repo = ? AND node_id = ?", (REPO, test_id))
    return row


@pytest.mark.parametrize(
    "store_kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_failed_tests_histories_suspect_range_and_a_flaky_rerun(
    request: pytest.FixtureRequest,
    store_kind: str,
    tmp_path: Path,
    github: FakeGitHub,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    store_url = request.getfixturevalue("postgres_url") if store_kind == "postgres" else None
    with ResultsLoop(tmp_path, github, oidc, callbacks=hud.callback_settings(), store_url=store_url) as loop:  # fmt: skip
        # upstream commit 1: all three pass; the run reported its progress on the way
        first = _pr_at(loop, SHA_1)
        assert loop.callback(REPO, first, status="in_progress").status_code == 200
        again = loop.callback(
            REPO, first, status="in_progress", extra={"progress": {"done": 3, "total": 8, "step": "test-1-checkout"}}
        )  # fmt: skip
        assert again.status_code == 200 and again.json()["status"] == "in_progress"
        running = _job(loop, first["delivery_id"])
        assert (running["progress_done"], running["progress_total"]) == (3, 8)
        assert running["progress_step"] == "test-1-checkout"
        loop.clock.advance(60)
        done = _completed(loop, first, run_report([], [TEST_A, TEST_B, TEST_C], steps=[]))
        assert done.status_code == 200, done.text
        assert _job(loop, first["delivery_id"])["failure_kind"] is None

        # upstream commit 2: test A and B fail
        loop.clock.advance(60)
        second = _pr_at(loop, SHA_2, number=3)
        assert loop.callback(REPO, second, status="in_progress").status_code == 200
        report = run_report([TEST_A, TEST_B], [TEST_C])
        failed = _completed(loop, second, report)
        assert failed.status_code == 200, failed.text
        # the identical repeat changes nothing (no second failure row, no second history entry)
        assert _completed(loop, second, copy.deepcopy(report)).status_code == 200
        job = _job(loop, second["delivery_id"])
        failures = loop.rows(
            "SELECT node_id, outcome, message, location, shard, head_sha FROM test_failures"
            " WHERE delivery_id = ? ORDER BY node_id",
            (second["delivery_id"],),
        )
        status_a = _status(loop, TEST_A)

        # commit 2 again (the PR re-opened: a new dispatch, a new run; a re-run of the same
        # run reports only through the relay's re-run path, its callback token being
        # one-shot) where test A passes: A is flaky, B still fails
        again_2 = _pr_at(loop, SHA_2, number=3)
        rerun: dict[str, Any] = {"run_id": 9002, "check_run_id": 9002}
        assert loop.callback(REPO, again_2, status="in_progress", **rerun).status_code == 200
        flaky = _completed(loop, again_2, run_report([TEST_B], [TEST_A, TEST_C]), **rerun)
        assert flaky.status_code == 200, flaky.text
        after_rerun_a, after_rerun_b = _status(loop, TEST_A), _status(loop, TEST_B)
        loop.drain()

    assert (job["failure_kind"], job["failure_step"]) == ("test", None)
    assert json.loads(job["legs"]) == [
        {"name": "test (shard 1)", "conclusion": "failure", "tests": None}
    ]
    details = json.loads(job["run_details"])
    assert details["log_tail"]["text"] == "E   AssertionError"
    assert details["outcomes"] == {"passed": 1, "failed": 2} and details["failures"] == 2
    assert [(f["node_id"], f["outcome"], f["shard"], f["head_sha"]) for f in failures] == [
        (TEST_A, "failed", "1", SHA_2),
        (TEST_B, "failed", "1", SHA_2),
    ]
    assert failures[0]["message"] == f"AssertionError in {TEST_A}"
    assert failures[0]["location"] == "test/test_ops.py:21: AssertionError"
    kept = history.decode(status_a["history"])
    assert [(e.code, e.sha) for e in kept] == [("f", SHA_2[:12]), ("p", SHA_1[:12])]
    suspect = history.suspect(kept)
    assert suspect is not None and suspect.as_dict()["range"] == f"{SHA_1[:12]}..{SHA_2[:12]}"
    assert status_a["flaky_count"] == 0 and status_a["last_pass_sha"] == SHA_1[:12]
    assert after_rerun_a["flaky_count"] == 1 and after_rerun_a["flaky_sha"] == SHA_2[:12]
    assert [e.code for e in history.decode(after_rerun_a["history"])] == ["p", "f", "p"]
    assert after_rerun_b["flaky_count"] == 0 and after_rerun_b["last_code"] == "f"
    # the HUD gets the compact report: counts and the first failures, no id lists
    hud_report = next(
        r["untrusted"]["callback_payload"]["run_report"]
        for r in hud.rows.values()
        if r["untrusted"]["callback_payload"]["delivery_id"] == second["delivery_id"]
        and r["untrusted"]["callback_payload"]["workflow"]["run_attempt"] == 1
    )
    assert [f["id"] for f in hud_report["tests"]["failures"]] == [TEST_A, TEST_B]
    assert "results" not in hud_report["tests"]


def test_infrastructure_and_crcr_only_failures(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    checkout_failed = [
        {"job": "select", "name": "plan", "kind": "plan", "outcome": "success"},
        {"job": "select", "name": "checkout", "kind": "checkout", "outcome": "failure"},
    ]
    with ResultsLoop(tmp_path, github, oidc) as loop:
        infra = _pr_at(loop, SHA_1)
        assert loop.callback(REPO, infra, status="in_progress").status_code == 200
        report = {"schema_version": "1", "steps": checkout_failed}
        assert _completed(loop, infra, report, failed=True).status_code == 200
        crcr = _pr_at(loop, SHA_2, number=3)
        assert loop.callback(REPO, crcr, status="in_progress").status_code == 200
        assert _completed(loop, crcr, None, failed=True).status_code == 200
        bad = _pr_at(loop, "3" * 40, number=4)
        assert loop.callback(REPO, bad, status="in_progress").status_code == 200
        broken = {"schema_version": "1", "steps": [{**checkout_failed[1], "outcome": "exploded"}]}
        refused = _completed(loop, bad, broken, failed=True)
        too_far = loop.callback(
            REPO, bad, status="in_progress", extra={"progress": {"done": 9, "total": 8}}
        )
        kinds = {
            r["delivery_id"]: (r["failure_kind"], r["failure_step"])
            for r in loop.rows("SELECT delivery_id, failure_kind, failure_step FROM job_runs")
        }
    assert kinds[infra["delivery_id"]] == ("infrastructure", "select / checkout")
    assert kinds[crcr["delivery_id"]] == ("unclassified", None)  # no steps: counted as before
    assert refused.status_code == 400 and "run_report.steps.0.outcome" in refused.json()["error"]
    assert too_far.status_code == 400 and "progress" in too_far.json()["error"]
    assert kinds[bad["delivery_id"]] == (None, None)  # still in progress: nothing was recorded
