"""Every page model is the same on SQLite and on PostgreSQL for the same rows."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from relay.callbacks.state_machine import JobKey
from relay.dashboard import grid, metrics, views
from relay.dashboard.per_test import one_test_page
from relay.dashboard.rollup import Rollups
from relay.dashboard.search import parse_search
from relay.results.records import record_completed
from relay.results.report import RunReport
from relay.store import Store, Tx, open_store

DAY = 86400.0
NOW = time.time()
REPOS = (("acme/one", "L4"), ("beta/two", "L2"))
CONCLUSIONS = ("success", "success", "failure", "timed_out", "cancelled", "success")


def _seed(store: Store) -> None:
    store.migrate()
    with store.transaction() as tx:
        for r, (repo, level) in enumerate(REPOS):
            tx.execute(
                "INSERT INTO repo_levels (repo, since, level) VALUES (?, ?, ?)",
                (repo, NOW - 40 * DAY, level),
            )
            for n in range(40):
                at = NOW - n * 0.4 * DAY - r * 7.0
                delivery, sha = f"d{n:03d}", f"{n:02x}" * 20
                event = "push" if n % 3 == 0 else "pull_request"
                pr = None if event == "push" else 900 + n // 2
                tx.execute(
                    "INSERT INTO dispatches (delivery_id, repo, level, event_type, pr_number,"
                    " head_sha, labels, dispatched_at) VALUES (?, ?, ?, ?, ?, ?, '[]', ?)",
                    (delivery, repo, level, event, pr, sha, at),
                )
                selection = f"{repo}/s{n}" if n % 4 == 0 else None
                if selection:
                    summary = {"per_stage": {"impact": n, "agent": n // 2}, "rationale": "r"}
                    tx.execute(
                        "INSERT INTO selection_reports (selection_id, summary, html, repo,"
                        " delivery_id, created_at) VALUES (?, ?, NULL, ?, ?, ?)",
                        (selection, json.dumps(summary), repo, delivery, at),
                    )
                for j, job in enumerate(("build", "test")):
                    done = at + 600 + 300 * j + n
                    tx.execute(
                        "INSERT INTO job_runs (delivery_id, repo, run_id, run_attempt, job_name,"
                        " workflow_name, event_type, pr_number, head_sha, status, conclusion,"
                        " url, dispatched_at, in_progress_received_at, completed_received_at,"
                        " queue_time, execution_time, tests_passed, tests_failed,"
                        " tests_skipped, tests_total, selection_id, updated_at)"
                        " VALUES (?, ?, ?, 1, ?, 'ci', ?, ?, ?, 'completed', ?, ?, ?, ?, ?, ?,"
                        " ?, 5, 1, 0, 6, ?, ?)",
                        (
                            delivery, repo, 1000 + n, job, event, pr, sha,
                            CONCLUSIONS[(n + j + r) % len(CONCLUSIONS)],
                            f"https://github.com/{repo}/actions/runs/{1000 + n}",
                            at, at + 60 + n, done, 60.0 + n, done - at - 60 - n,
                            selection if j == 0 else None, done,
                        ),
                    )  # fmt: skip
                    _report(tx, delivery, repo, 1000 + n, job, sha, at, (n + j + r))


def _report(
    tx: Tx, delivery: str, repo: str, run_id: int, job: str, sha: str, at: float, k: int
) -> None:
    """Per-test results as the callback records them (every other job fails test_b)."""
    conclusion = CONCLUSIONS[k % len(CONCLUSIONS)]
    failing = ["test/t.py::TestT::test_b_100%"] if conclusion == "failure" else []
    report = RunReport.model_validate(
        {
            "steps": [{"job": "test (shard 1)", "name": "test", "kind": "test",
                       "outcome": "failure" if failing else "success"}],
            "tests": {
                "failures": [{"id": t, "message": f"boom {k}"} for t in failing],
                "results": {"passed": ["test/t.py::TestT::test_a"] + ([] if failing else ["test/t.py::TestT::test_b_100%"])},
            },
            "legs": [{"name": "test (shard 1)", "conclusion": conclusion}],
        }
    )  # fmt: skip
    key = JobKey(delivery, repo, run_id, 1, job)
    record_completed(tx, key, conclusion, report, (len(failing), 2), (at, sha), 20, at + 900)


def _pages(store: Store) -> dict[str, object]:
    rollups = Rollups()
    builders = {
        "overview": lambda tx: views.overview(tx, NOW, rollups),
        "backend": lambda tx: grid.backend_page(tx, "acme/one", NOW, None, None, rollups),
        "failures": lambda tx: grid.backend_page(tx, "acme/one", NOW, "pr", "failure", rollups),
        "pr": lambda tx: grid.change_page(tx, NOW, pr=904),
        "commit": lambda tx: grid.change_page(tx, NOW, sha="0303030"),
        "metrics": lambda tx: metrics.metrics_page(tx, NOW, 30, rollups),
        "readiness": lambda tx: views.readiness_table(tx, NOW, rollups),
        "run": lambda tx: grid.change_page(tx, NOW, delivery="d002", repo="acme/one"),
        "test": lambda tx: one_test_page(tx, NOW, "test/t.py::TestT::test_b_100%", None),
        "search test": lambda tx: grid.backend_page(
            tx, "acme/one", NOW, None, None, rollups, search=parse_search("TEST_B_100%")
        ),
        "search sha": lambda tx: grid.backend_page(
            tx, "acme/one", NOW, None, None, rollups, search=parse_search("0303030")
        ),
        "kind": lambda tx: grid.backend_page(tx, "acme/one", NOW, None, None, rollups, kind="test"),
    }
    with store.transaction(write=False) as tx:
        return {name: build(tx) for name, build in builders.items()}


@pytest.mark.postgres
def test_sqlite_and_postgres_give_the_same_pages(tmp_path: Path, postgres_url: str) -> None:
    models = []
    for url in (f"sqlite:///{tmp_path / 'relay.db'}", postgres_url):
        store = open_store(url)
        try:
            _seed(store)
            models.append(_pages(store))
        finally:
            store.close()
    sqlite_pages, postgres_pages = models
    assert sqlite_pages["overview"]["levels"]  # type: ignore[index]
    assert sqlite_pages["run"]["backends"][0]["jobs"][0]["failures"]  # type: ignore[index]
    assert sqlite_pages["search test"]["matched_tests"]  # type: ignore[index]  # % matched literally
    for name in sqlite_pages:
        assert postgres_pages[name] == sqlite_pages[name], name
