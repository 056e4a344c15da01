"""Every query behind every page reads the big tables through an index (SQLite's plans)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from relay.dashboard import grid, metrics, views
from relay.dashboard.explain import page_plans
from relay.dashboard.per_test import one_test_page
from relay.dashboard.rollup import Rollups
from relay.dashboard.search import parse_search
from relay.store import Tx, open_store
from tests.dashboard.conftest import SeededRelay
from tests.dashboard.seeding import (
    L2_REPO,
    L4_REPO,
    PR_NUMBER,
    RESULTS_REPO,
    SHA_OPENED,
    SHA_PUSH,
    TEST_ADD,
)

Builder = Callable[[Tx, float], Any]
ROLLUPS = Rollups()


def _searching(query: str) -> Builder:
    search = parse_search(query)
    return lambda tx, now: grid.backend_page(
        tx, RESULTS_REPO, now, None, None, ROLLUPS, search=search
    )


PAGES: dict[str, Builder] = {
    "overview": lambda tx, now: views.overview(tx, now, ROLLUPS),
    "backend": lambda tx, now: grid.backend_page(tx, L4_REPO, now, None, None, ROLLUPS),
    "backend failures": lambda tx, now: grid.backend_page(
        tx, L4_REPO, now, None, "failure", ROLLUPS
    ),
    "backend nightly": lambda tx, now: grid.backend_page(
        tx, L2_REPO, now, "nightly", None, ROLLUPS
    ),
    "pr": lambda tx, now: grid.change_page(tx, now, pr=PR_NUMBER),
    "commit": lambda tx, now: grid.change_page(tx, now, sha=SHA_OPENED[:9]),
    "delivery": lambda tx, now: grid.change_page(tx, now, delivery="x", repo=L4_REPO),
    "metrics": lambda tx, now: metrics.metrics_page(tx, now, 30, ROLLUPS),
    "readiness": lambda tx, now: views.readiness_table(tx, now, ROLLUPS),
    "results backend": lambda tx, now: grid.backend_page(
        tx, RESULTS_REPO, now, None, None, ROLLUPS
    ),
    "results backend, older page": lambda tx, now: grid.backend_page(
        tx, RESULTS_REPO, now, None, None, ROLLUPS, before=now
    ),
    "results backend, infrastructure": lambda tx, now: grid.backend_page(
        tx, RESULTS_REPO, now, None, None, ROLLUPS, kind="infrastructure"
    ),
    **{
        f"results backend, search {q}": _searching(q)
        for q in (f"#{PR_NUMBER}", SHA_PUSH[:10], "test_add")
    },
    "run page": lambda tx, now: grid.change_page(
        tx, now, delivery="dlv-sync-0002", repo=RESULTS_REPO
    ),
    "test page": lambda tx, now: one_test_page(tx, now, TEST_ADD, None),
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_no_page_scans_a_big_table(seeded_relay: SeededRelay, name: str) -> None:
    store = open_store(seeded_relay.store_url)
    try:
        plans = page_plans(store, PAGES[name], time.time())
    finally:
        store.close()
    assert plans, "the page ran no query"
    scans = [(plan.sql, line) for plan in plans for line in plan.full_scans()]
    assert scans == []


def test_the_scan_detector_tells_index_reads_from_full_scans() -> None:
    from relay.dashboard.explain import Plan

    lines = (
        "SCAN job_runs",
        "SCAN dispatches USING COVERING INDEX dispatches_repo_dispatched",
        "SEARCH job_runs USING INDEX job_runs_pr_number (pr_number=?)",
        "  ->  Seq Scan on deliveries  (cost=0.00..1.01 rows=1 width=8)",
        "SCAN repo_levels",
    )
    assert Plan("q", lines).full_scans() == [lines[0], lines[3]]
