"""The JSON twins of the pages, against a relay seeded through its real endpoints."""

from __future__ import annotations

import httpx

from tests.dashboard.conftest import SeededRelay
from tests.dashboard.seeding import (
    L1_REPO,
    L2_REPO,
    L4_REPO,
    PR_NUMBER,
    PR_TITLE,
    RESULTS_REPO,
    SHA_NIGHTLY,
    SHA_OPENED,
    SHA_PUSH,
    SHA_SYNC,
    XSS_JOB,
)


def _get(relay: SeededRelay, path: str) -> httpx.Response:
    return httpx.get(f"{relay.url}{path}", timeout=10)


def test_overview_groups_backends_by_level_with_their_figures(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, "/api/crcr").json()
    levels = {g["level"]: [b["repo"] for b in g["backends"]] for g in page["levels"]}
    assert levels == {"L4": [L4_REPO], "L2": [L2_REPO, RESULTS_REPO], "L1": [L1_REPO]}
    assert [g["level"] for g in page["levels"]] == ["L4", "L2", "L1"]
    l4 = page["levels"][0]["backends"][0]
    # Six completed jobs on the L4 backend, one of them failed.
    assert l4["pass_7d"] == {"passed": 5, "decisive": 6, "rate": 5 / 6}
    assert l4["median_queue_7d"] is not None and l4["median_queue_7d"] >= 0
    l2 = page["levels"][1]["backends"][0]
    assert (l2["pass_14d"]["passed"], l2["pass_14d"]["decisive"]) == (2, 3)
    health = page["health"]
    assert health["last_webhook_at"] is not None
    assert health["dead_letters"] == 0


def test_backend_grid_rows_are_upstream_events_newest_first(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, f"/api/crcr/{L4_REPO}").json()
    ids = seeded_relay.seeded.delivery_ids
    assert [r["delivery_id"] for r in page["rows"]] == [ids["push"], ids["sync"], ids["opened"]]
    assert page["columns"] == sorted(
        ["spyre-ci / test (1/2)", "spyre-ci / test (2/2)", f"spyre-ci / {XSS_JOB}"]
    )
    opened = page["rows"][2]
    states = {
        c: cell and cell["state"] for c, cell in zip(page["columns"], opened["cells"], strict=True)
    }
    assert states == {
        "spyre-ci / test (1/2)": "success",
        "spyre-ci / test (2/2)": "failure",
        f"spyre-ci / {XSS_JOB}": None,
    }
    assert opened["change_url"] == f"/crcr/pr/{PR_NUMBER}"
    assert page["rows"][0]["change_url"] == f"/crcr/commit/{SHA_PUSH}"


def test_links_survive_only_into_the_reporting_repository(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, f"/api/crcr/{L4_REPO}").json()
    sync = page["rows"][1]
    cells = dict(zip(page["columns"], sync["cells"], strict=True))
    assert cells["spyre-ci / test (1/2)"]["url"] == (
        f"https://github.com/{L4_REPO}/actions/runs/102"
    )
    assert cells["spyre-ci / test (2/2)"]["url"] is None  # reported as https://evil.example/...


def test_grid_filters(seeded_relay: SeededRelay) -> None:
    ids = seeded_relay.seeded.delivery_ids
    failed = _get(seeded_relay, f"/api/crcr/{L4_REPO}?conclusion=failure").json()
    assert [r["delivery_id"] for r in failed["rows"]] == [ids["opened"]]
    pushes = _get(seeded_relay, f"/api/crcr/{L4_REPO}?event=push").json()
    assert [r["delivery_id"] for r in pushes["rows"]] == [ids["push"]]
    nightly = _get(seeded_relay, f"/api/crcr/{L2_REPO}?event=nightly").json()
    assert [(r["delivery_id"], r["event_type"]) for r in nightly["rows"]] == [
        (SHA_NIGHTLY, "nightly")
    ]
    everything = _get(seeded_relay, f"/api/crcr/{L2_REPO}").json()
    assert SHA_NIGHTLY in [r["delivery_id"] for r in everything["rows"]]
    bad = _get(seeded_relay, f"/api/crcr/{L4_REPO}?conclusion=exploded")
    assert bad.status_code == 422 and "conclusion" in bad.text


def test_pr_page_shows_every_backend_for_the_newest_head(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, f"/api/crcr/pr/{PR_NUMBER}").json()
    assert (page["head_sha"], page["earlier_shas"]) == (SHA_SYNC, [SHA_OPENED])
    assert page["upstream"] == {
        "title": PR_TITLE,
        "author": "Codertocat",
        "url": f"https://github.com/Codertocat/Hello-World/pull/{PR_NUMBER}",
        "ref": "changes",
        "state": "open",
    }
    assert [b["repo"] for b in page["backends"]] == [L4_REPO, L2_REPO, RESULTS_REPO, L1_REPO]
    l4, l2, results, l1 = page["backends"]
    # the failing-test count per job (the newest attempt of the re-run job), linked to details
    (report,) = results["jobs"]
    assert (report["run_attempt"], report["tests"]["failed"]) == (2, 2)
    assert report["details_url"].startswith(
        f"/crcr/deliveries/{seeded_relay.seeded.delivery_ids['sync']}"
    )
    assert {j["job_name"] for j in l4["jobs"]} == {"test (1/2)", "test (2/2)", XSS_JOB}
    assert l1["jobs"] == [] and l1["dispatched_at"] is not None
    build = l2["jobs"][0]
    assert build["tests"] == {"passed": 940, "failed": 0, "skipped": 3, "total": 943}
    selection = next(j["selection"] for j in l4["jobs"] if j["selection"])
    assert selection["selection_id"] == seeded_relay.seeded.selection_id
    assert [s["kept"] for s in selection["stages"]] == [41, 3120, 1210, 943]
    assert selection["top_causes"][0] == {
        "cause": "aten/src/ATen/native/BinaryOps.cpp",
        "count": 610,
    }
    assert selection["rationale"].startswith("BinaryOps changed")


def test_commit_page_by_prefix_and_delivery_page(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, f"/api/crcr/commit/{SHA_OPENED[:10]}").json()
    jobs = [(b["repo"], j["job_name"], j["state"]) for b in page["backends"] for j in b["jobs"]]
    assert sorted(jobs) == [
        (L4_REPO, "test (1/2)", "success"),
        (L4_REPO, "test (2/2)", "failure"),
        (RESULTS_REPO, "report", "success"),
    ]
    assert _get(seeded_relay, "/api/crcr/commit/not-a-sha").status_code == 400
    ids = seeded_relay.seeded.delivery_ids
    one = _get(seeded_relay, f"/api/crcr/deliveries/{ids['push']}?repo={L2_REPO}").json()
    assert [(b["repo"], [j["state"] for j in b["jobs"]]) for b in one["backends"]] == [
        (L2_REPO, ["timed_out"])
    ]


def test_unknown_backend_is_a_404_that_says_why(seeded_relay: SeededRelay) -> None:
    answer = _get(seeded_relay, "/api/crcr/nobody/nothing")
    assert answer.status_code == 404
    assert "not in the allowlist" in answer.json()["detail"]


def test_stored_report_is_served_sandboxed(seeded_relay: SeededRelay) -> None:
    sid = seeded_relay.seeded.selection_id
    page = _get(seeded_relay, f"/selection/{sid}")
    assert (
        page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    )
    assert f'href="/selection-html/{sid}"' in page.text  # our page links to the full report
    answer = _get(seeded_relay, f"/selection-html/{sid}")
    assert answer.status_code == 200
    csp = answer.headers["content-security-policy"]
    assert csp.startswith("sandbox;") and "script-src" not in csp and "default-src 'none'" in csp
    assert answer.headers["x-frame-options"] == "DENY"
    assert "<h1>Selection report</h1>" in answer.text
    summary = _get(seeded_relay, f"/api/selection/{sid}").json()
    assert summary["repo"] == L4_REPO and summary["selected"] == 943
    # links back to the run it chose tests for and to its backend
    ids = seeded_relay.seeded.delivery_ids
    assert (
        summary["run_url"] == f"/crcr/deliveries/{ids['sync']}?repo={L4_REPO.replace('/', '%2F')}"
    )
    assert summary["backend_url"] == f"/crcr/{L4_REPO}"
    assert summary["job"]["conclusion"] == "success"
    assert _get(seeded_relay, "/selection/no-such-report").status_code == 404
    plain = seeded_relay.seeded.summary_only_selection_id
    assert _get(seeded_relay, f"/selection-html/{plain}").status_code == 404  # no HTML uploaded


def test_a_report_without_html_is_shown_from_its_summary_escaped(seeded_relay: SeededRelay) -> None:
    answer = _get(seeded_relay, f"/selection/{seeded_relay.seeded.summary_only_selection_id}")
    assert answer.status_code == 200
    assert "sandbox" not in answer.headers["content-security-policy"]  # our own page
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert "&lt;b&gt;not bold&lt;/b&gt;" in answer.text and "<b>not bold" not in answer.text
    assert "&lt;script&gt;" in answer.text


def test_readiness_reports_each_criterion_with_its_value(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, "/api/crcr/readiness").json()
    by_repo = {b["repo"]: b for b in page["backends"]}
    l2 = {c["key"]: c for c in by_repo[L2_REPO]["criteria"]}
    assert l2["pass_rate"]["value"] == "66.7 %" and not l2["pass_rate"]["met"]
    # The level history was recorded from the allowlist when the relay started.
    assert l2["time_at_l2"]["value"] == "0 d at L2" and not l2["time_at_l2"]["met"]
    assert l2["timeout_rate"]["raw"] == 1 / 3 and not l2["timeout_rate"]["met"]
    assert by_repo[L1_REPO]["criteria"][0]["met"] is False
    assert [b["repo"] for b in page["backends"]] == [L4_REPO, L2_REPO, RESULTS_REPO, L1_REPO]
    # the results backend's checkout failure is left out: 3 jobs judged, 1 passed
    results = {c["key"]: c for c in by_repo[RESULTS_REPO]["criteria"]}
    assert by_repo[RESULTS_REPO]["jobs"] == 3 and results["pass_rate"]["value"] == "33.3 %"


def test_metrics_series_per_backend_with_results(seeded_relay: SeededRelay) -> None:
    page = _get(seeded_relay, "/api/crcr/metrics?days=7").json()
    assert {s["repo"] for s in page["series"]} == {L4_REPO, L2_REPO, RESULTS_REPO}
    l4 = next(s for s in page["series"] if s["repo"] == L4_REPO)
    assert len(l4["points"]) == 7
    assert l4["points"][-1]["success_rate"] == 5 / 6
    assert all(p["success_rate"] is None for p in l4["points"][:-1])
    assert _get(seeded_relay, "/api/crcr/metrics?days=400").status_code == 422
