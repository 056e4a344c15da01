"""Per-test results on the dashboard's JSON twins, against the seeded relay: the run page's
failed tests, history, suspect range and change, flakiness; failure kinds; the backend
page's leg columns, titles, search, kind filter and pages; the test page."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from tests.dashboard.conftest import SeededRelay
from tests.dashboard.seeding import (
    PR_NUMBER,
    PR_TITLE,
    PUSH_TITLE,
    RESULTS_REPO,
    SHA_OPENED,
    SHA_PUSH,
    SHA_SYNC,
    SUSPECT_CHANGE,
    TEST_ADD,
    TEST_MUL,
    XSS_MESSAGE,
)

WF = "upstream-dispatch"


def _get(relay: SeededRelay, path: str) -> httpx.Response:
    return httpx.get(f"{relay.url}{path}", timeout=10)


def _backend(relay: SeededRelay, query: str = "") -> dict[str, Any]:
    answer = _get(relay, f"/api/crcr/{RESULTS_REPO}{query}")
    assert answer.status_code == 200, answer.text
    page: dict[str, Any] = answer.json()
    return page


def test_run_page_lists_failed_tests_with_message_history_and_suspects(
    seeded_relay: SeededRelay,
) -> None:
    sync = seeded_relay.seeded.delivery_ids["sync"]
    page = _get(seeded_relay, f"/api/crcr/deliveries/{sync}?repo={RESULTS_REPO}").json()
    (backend,) = page["backends"]
    (job,) = backend["jobs"]  # the re-run (attempt 2) replaces attempt 1
    assert (job["run_attempt"], job["failure_kind"], job["flaky_failures"]) == (2, "test", 1)
    add, mul = job["failures"]
    assert (add["id"], add["message"], add["shard"]) == (TEST_ADD, XSS_MESSAGE, "2")
    assert add["location"] == "test/test_ops.py:21: AssertionError"
    assert [(h["outcome"], h["sha"]) for h in add["history"]] == [
        ("failed", SHA_SYNC[:12]),
        ("failed", SHA_SYNC[:12]),
        ("passed", SHA_OPENED[:12]),
    ]
    assert add["suspect"]["range"] == f"{SHA_OPENED[:12]}..{SHA_SYNC[:12]}"
    assert add["suspect"]["compare_url"] == (
        f"https://github.com/Codertocat/Hello-World/compare/{SHA_OPENED[:12]}...{SHA_SYNC[:12]}"
    )
    assert add["suspect_change"]["change"] == SUSPECT_CHANGE
    assert add["suspect_change"]["evidence"] == "calls reference_add"
    assert not add["flaky"]
    # test_mul passed in attempt 1 and failed in attempt 2 on the same commit: flaky
    assert (mul["id"], mul["flaky"], mul["flaky_count"]) == (TEST_MUL, True, 1)
    assert mul["suspect"] is None  # the same commit passed: no upstream change to suspect
    assert mul["suspect_change"] is None  # the selection's chain names only test_add
    details = job["details"]
    assert [s["outcome"] for s in details["steps"]][-1] == "failure"
    assert details["log_tail"]["step"] == "test (shard 2) / test"
    assert details["junit_url"] == f"https://github.com/{RESULTS_REPO}/actions/runs/401#artifacts"


def test_checkout_failure_is_infrastructure_and_leaves_the_pass_rate_alone(
    seeded_relay: SeededRelay,
) -> None:
    push = seeded_relay.seeded.delivery_ids["push"]
    page = _get(seeded_relay, f"/api/crcr/deliveries/{push}?repo={RESULTS_REPO}").json()
    jobs = {j["job_name"]: j for j in page["backends"][0]["jobs"]}
    report = jobs["report"]
    assert (report["state"], report["failure_kind"]) == ("infrastructure", "infrastructure")
    assert report["failure_step"] == "select / checkout"
    assert report["details"]["log_tail"]["text"] == f"fatal: no such commit {SHA_PUSH}"
    summary = _backend(seeded_relay)["summary"]
    # 1 success, 2 test failures (the re-run counts): the checkout failure is counted apart
    assert summary["pass_7d"] == {"passed": 1, "decisive": 3, "rate": 1 / 3}
    assert summary["infrastructure_7d"] == 1
    assert summary["flaky_tests_7d"] == 1
    infra = _backend(seeded_relay, "?kind=infrastructure")
    assert [r["delivery_id"] for r in infra["rows"]] == [push]
    # an in-progress job shows its steps done out of total
    running = jobs["report (gpu)"]
    assert running["progress"] == {"done": 3, "total": 8, "step": "test-1-checkout"}


def test_backend_grid_has_a_column_per_leg_titles_and_pages(seeded_relay: SeededRelay) -> None:
    ids = seeded_relay.seeded.delivery_ids
    page = _backend(seeded_relay)
    assert page["columns"] == [
        f"{WF} / report",
        f"{WF} / report (gpu)",
        f"{WF} / test (shard 1)",
        f"{WF} / test (shard 2)",
    ]
    sync = next(r for r in page["rows"] if r["delivery_id"] == ids["sync"])
    cells = dict(zip(page["columns"], sync["cells"], strict=True))
    assert cells[f"{WF} / test (shard 1)"]["state"] == "success"
    assert cells[f"{WF} / test (shard 2)"]["tests"]["failed"] == 2
    assert sync["title"] == PR_TITLE
    push = next(r for r in page["rows"] if r["delivery_id"] == ids["push"])
    assert push["title"] == PUSH_TITLE  # the pushed commit's first line
    assert page["page"]["next_before"] is None  # fewer rows than a page
    older = _backend(seeded_relay, f"?before={page['rows'][0]['at']!r}")
    assert [r["delivery_id"] for r in older["rows"]] == [r["delivery_id"] for r in page["rows"][1:]]


def test_search_by_pr_sha_and_test_name(seeded_relay: SeededRelay) -> None:
    ids = seeded_relay.seeded.delivery_ids
    by_pr = _backend(seeded_relay, f"?q=%23{PR_NUMBER}")
    assert by_pr["search"]["kind"] == "pr"
    assert [r["delivery_id"] for r in by_pr["rows"]] == [ids["sync"], ids["opened"]]
    by_sha = _backend(seeded_relay, f"?q={SHA_PUSH[:10]}")
    assert [r["delivery_id"] for r in by_sha["rows"]] == [ids["push"]]
    by_test = _backend(seeded_relay, "?q=TEST_ADD_spyre")  # case-insensitive
    assert [r["delivery_id"] for r in by_test["rows"]] == [ids["sync"]]
    assert by_test["matched_tests"][0]["node_id"] == TEST_ADD
    assert by_test["matched_tests"][0]["failures"] == 2  # both attempts
    assert _get(seeded_relay, f"/api/crcr/{RESULTS_REPO}?q=ab").status_code == 422
    assert _get(seeded_relay, f"/crcr/{RESULTS_REPO}?q=ab").status_code == 400
    assert _get(seeded_relay, f"/crcr/{RESULTS_REPO}?kind=bogus").status_code == 400


def test_test_page_shows_its_history_on_every_backend(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, f"/api/crcr/test?id={quote(TEST_ADD, safe='')}").json()
    (backend,) = page["backends"]
    assert backend["repo"] == RESULTS_REPO and backend["last_outcome"] == "failed"
    assert backend["suspect"]["range"] == f"{SHA_OPENED[:12]}..{SHA_SYNC[:12]}"
    assert [f["message"] for f in backend["failures"]] == [XSS_MESSAGE, XSS_MESSAGE]
    missing = _get(seeded_relay, "/api/crcr/test?id=test/nowhere.py::test_x")
    assert missing.status_code == 404 and "No outcome" in missing.json()["detail"]
    assert _get(seeded_relay, "/api/crcr/test").status_code == 422


def test_selection_page_links_back_to_its_run_and_backend(seeded_relay: SeededRelay) -> None:
    sync = seeded_relay.seeded.delivery_ids["sync"]
    page = _get(seeded_relay, f"/api/selection/{RESULTS_REPO}/sel-results").json()
    assert page["run_url"] == f"/crcr/deliveries/{sync}?repo={quote(RESULTS_REPO, safe='')}"
    assert page["backend_url"] == f"/crcr/{RESULTS_REPO}" and page["html_url"] is None
    assert page["job"]["tests_failed"] == 2
