"""Page models of one backend (the grid) and of one upstream change (PR or commit)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any
from urllib.parse import quote

from relay.dashboard import queries, results_queries, run_page, upstream
from relay.dashboard.failures import page_of_test, run_url
from relay.dashboard.presentation import EVENT_FILTERS, job_state, look
from relay.dashboard.rollup import Rollups
from relay.dashboard.search import Search
from relay.dashboard.stats import DAY
from relay.dashboard.views import (
    backend_summary,
    change_url,
    job_cell,
    latest_attempts,
    legs_of,
    level_rank,
    levels_for,
    readiness_for,
    selection_for,
)
from relay.store.base import Row, Tx

GRID_ROWS = 40
GRID_COLUMNS = 14


def backend_page(
    tx: Tx,
    repo: str,
    now: float,
    event: str | None,
    conclusion: str | None,
    rollups: Rollups,
    *,
    kind: str | None = None,
    before: float | None = None,
    search: Search | None = None,
) -> dict[str, Any]:
    """The backend's grid: newest events first (`before`: the page after a cursor), or
    the events a search finds; one column per job and per leg (shard) of a job."""
    level = levels_for(tx, [repo]).get(repo)
    event_types = EVENT_FILTERS.get(event or "", ())
    matched: list[dict[str, Any]] = []
    if search is not None:
        events, matched = _searched_events(tx, repo, search)
    else:
        events = _grid_events(tx, repo, event_types, conclusion, kind, before)
    ids = [e["delivery_id"] for e in events]
    runs = latest_attempts(queries.job_runs_for(tx, repo, ids))
    by_cell: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        cell = job_cell(run)
        by_cell[(run["delivery_id"], _column(run))] = cell
        for leg in cell["legs"]:
            by_cell[(run["delivery_id"], _leg_column(run, leg["name"]))] = _leg_cell(cell, leg)
    columns = _columns(runs)
    titles = titles_for(tx, repo, ids)
    rows = [
        {
            "delivery_id": e["delivery_id"],
            "event_type": e["event_type"],
            "pr_number": e["pr_number"],
            "head_sha": e["head_sha"],
            "title": titles.get(e["delivery_id"]),
            "at": e["at"],
            "change_url": change_url(e["pr_number"], e["head_sha"])
            or f"/crcr/deliveries/{quote(e['delivery_id'], safe='')}",
            "details_url": run_url(e["delivery_id"], repo),
            "cells": [by_cell.get((e["delivery_id"], c)) for c in columns],
        }
        for e in events
    ]
    full_page = search is None and len(events) == GRID_ROWS
    summary = backend_summary(tx, repo, level, now, rollups)
    summary["flaky_tests_7d"] = results_queries.count_flaky(tx, repo, now - 7 * DAY)
    return {
        "now": now,
        "repo": repo,
        "known": level is not None or bool(rows) or _has_jobs(tx, repo),
        "filters": {"event": event, "conclusion": conclusion, "kind": kind},
        "search": search.as_dict() if search else None,
        "matched_tests": matched,
        "page": {"before": before, "next_before": events[-1]["at"] if full_page else None},
        "summary": summary,
        "readiness": readiness_for(tx, repo, level, now, rollups),
        "columns": columns,
        "rows": rows,
        "flaky_tests": [
            {**r, "test_url": page_of_test(str(r["node_id"]), repo)}
            for r in results_queries.flaky_tests(tx, repo, now - 7 * DAY)
        ],
        "dead_letters": _dead_dispatches(tx, repo),
    }


def titles_for(tx: Tx, repo: str, delivery_ids: list[str]) -> dict[str, str | None]:
    """The PR title (or pushed commit's first line) of each event: from the stored webhook,
    else from the webhook a job echoed (it outlives the webhook's retention)."""
    titles: dict[str, str | None] = {}
    for delivery, row in results_queries.webhook_payloads(tx, delivery_ids).items():
        described = upstream.describe(
            row["payload"], row["event"], row["pr_number"], row["head_sha"]
        )
        titles[delivery] = described["title"] if described else None
    missing = [d for d in delivery_ids if not titles.get(d)]
    for delivery, text in results_queries.echoed_payloads(tx, repo, missing).items():
        try:
            echoed = json.loads(text) if text else {}
        except ValueError:
            continue
        title = upstream.title_of(echoed.get("payload") if isinstance(echoed, dict) else None)
        if title:
            titles[delivery] = title
    return titles


def _searched_events(tx: Tx, repo: str, search: Search) -> tuple[list[Row], list[dict[str, Any]]]:
    """(grid rows, matching tests) of a search, newest first."""
    matched: list[dict[str, Any]] = []
    if search.kind == "pr":
        events = queries.dispatches_of_pr(tx, repo, int(search.value), GRID_ROWS)
    elif search.kind == "sha":
        events = queries.events_of_sha(tx, repo, search.value, GRID_ROWS)
    else:
        found = results_queries.failures_matching(tx, repo, search.value)
        events = queries.events_of_deliveries(tx, repo, [f["delivery_id"] for f in found])
        tests = Counter(str(f["node_id"]) for f in found)
        matched = [
            {"node_id": t, "failures": n, "test_url": page_of_test(t, repo)}
            for t, n in tests.most_common(20)
        ]
    unique = {e["delivery_id"]: e for e in sorted(events, key=lambda e: e["at"] or 0)}
    newest = sorted(unique.values(), key=lambda e: e["at"] or 0, reverse=True)
    return newest[:GRID_ROWS], matched


def _leg_column(run: Row, leg: str) -> str:
    workflow = run["workflow_name"]
    return f"{workflow} / {leg}" if workflow else leg


def _leg_cell(job: dict[str, Any], leg: dict[str, Any]) -> dict[str, Any]:
    """A leg (shard) of a job as a grid cell: its own conclusion and counts."""
    state = job_state("completed", leg["conclusion"])
    return {
        **job,
        "job": leg["name"],
        "state": state,
        "state_label": look(state).label,
        "conclusion": leg["conclusion"],
        "tests": leg["tests"],
        "execution_time": None,
        "leg": True,
        "legs": [],
    }


def _dead_dispatches(tx: Tx, repo: str) -> dict[str, Any]:
    """Dispatches to `repo` that exhausted their attempts (still in the dead letters):
    how many, and the newest one's error, in one query."""
    newest = tx.fetchone(
        "SELECT COUNT(*) OVER () AS n, last_error FROM dead_letters"
        " WHERE target = ? AND kind = 'dispatch' ORDER BY died_at DESC LIMIT 1",
        (repo,),
    )
    if newest is None:
        return {"count": 0, "last_error": None}
    return {"count": int(newest["n"]), "last_error": (newest["last_error"] or "")[:300] or None}


def _has_jobs(tx: Tx, repo: str) -> bool:
    return tx.fetchone("SELECT 1 AS x FROM job_runs WHERE repo = ? LIMIT 1", (repo,)) is not None


def _grid_events(
    tx: Tx,
    repo: str,
    event_types: tuple[str, ...],
    conclusion: str | None,
    kind: str | None,
    before: float | None,
) -> list[Row]:
    """Newest events first: dispatched ones, plus nightly/periodic runs (never dispatched)."""
    if conclusion or kind:
        return queries.recent_job_events(
            tx, repo, event_types, conclusion, GRID_ROWS, before=before, kind=kind
        )
    events = []
    if not event_types or set(event_types) - {"nightly", "periodic"}:
        events = queries.recent_dispatches(tx, repo, event_types, GRID_ROWS, before=before)
    scheduled = [t for t in event_types or ("nightly", "periodic") if t in ("nightly", "periodic")]
    if scheduled:
        events += queries.recent_job_events(tx, repo, scheduled, None, GRID_ROWS, before=before)
    unique = {e["delivery_id"]: e for e in sorted(events, key=lambda e: e["at"] or 0)}
    return sorted(unique.values(), key=lambda e: e["at"] or 0, reverse=True)[:GRID_ROWS]


def _column(row: Row) -> str:
    workflow = row["workflow_name"]
    return f"{workflow} / {row['job_name']}" if workflow else str(row["job_name"])


def _columns(runs: list[Row]) -> list[str]:
    """The most frequent jobs and legs, alphabetically, so that columns stay stable."""
    counts = Counter(_column(r) for r in runs)
    for run in runs:
        counts.update(_leg_column(run, leg["name"]) for leg in legs_of(run.get("legs")))
    return sorted(name for name, _ in counts.most_common(GRID_COLUMNS))


def change_page(
    tx: Tx,
    now: float,
    *,
    pr: int | None = None,
    sha: str | None = None,
    delivery: str | None = None,
    repo: str | None = None,
) -> dict[str, Any]:
    """Every backend's jobs for one PR, one commit (SHA prefix) or one delivery
    (optionally one repository of it: the check run's details link)."""
    if pr is not None:
        runs = queries.job_runs_for_pr(tx, pr)
        dispatched = queries.dispatches_for_pr(tx, pr)
        webhook = queries.upstream_delivery_for_pr(tx, pr)
    elif sha is not None:
        runs = queries.job_runs_for_sha(tx, sha)
        dispatched = queries.dispatches_for_sha(tx, sha)
        webhook = queries.upstream_delivery_for_sha(tx, sha)
    else:
        assert delivery is not None
        runs = queries.job_runs_for_delivery(tx, delivery)
        dispatched = queries.dispatches_for_delivery(tx, delivery)
        webhook = queries.upstream_delivery(tx, delivery)
    if repo:
        runs = [r for r in runs if r["repo"] == repo]
        dispatched = [d for d in dispatched if d["repo"] == repo]
    runs = latest_attempts(runs)
    all_shas = _newest_first_shas(runs)
    if pr is not None and all_shas:
        # A PR page shows its newest head commit; earlier ones are linked, not repeated.
        runs = [r for r in runs if r["head_sha"] == all_shas[0]]
    levels = levels_for(tx, sorted({str(r["repo"]) for r in [*runs, *dispatched]}))
    selections = selection_for(tx, [r["selection_id"] for r in runs if r["selection_id"]])
    backends: dict[str, dict[str, Any]] = {}
    newest_sha = all_shas[0] if pr is not None and all_shas else None
    for d in dispatched:  # newest first
        if newest_sha and d["head_sha"] not in (newest_sha, None):
            continue
        entry = _backend(backends, d["repo"], levels)
        entry["dispatched_at"] = entry["dispatched_at"] or d["dispatched_at"]
    for r in sorted(runs, key=lambda r: (str(r["job_name"]), -float(r["updated_at"] or 0))):
        cell = job_cell(r)
        cell["head_sha"] = r["head_sha"]
        cell["event_type"] = r["event_type"]
        cell["selection"] = selections.get(r["selection_id"] or "")
        cell["details_url"] = run_url(r["delivery_id"], r["repo"])
        _backend(backends, r["repo"], levels)["jobs"].append(cell)
    page = {
        "now": now,
        "kind": "pr" if pr is not None else "commit" if sha is not None else "delivery",
        "pr_number": pr,
        "sha": sha,
        "delivery_id": delivery,
        "repo": repo,
        "event": _event_of([*dispatched, *runs]),
        "upstream": upstream.describe(
            webhook["payload"], webhook["event"], webhook["pr_number"], webhook["head_sha"]
        )
        if webhook
        else None,
        "head_sha": all_shas[0] if all_shas else None,
        "earlier_shas": all_shas[1:],
        "backends": sorted(backends.values(), key=lambda b: (level_rank(b["level"]), b["repo"])),
    }
    return run_page.enrich(tx, page) if delivery is not None else run_page.count_flaky(tx, page)


def _event_of(rows: list[Row]) -> dict[str, Any] | None:
    """The upstream event (type, PR, head SHA) the rows belong to, for a delivery's title."""
    for row in rows:
        return {k: row[k] for k in ("event_type", "pr_number", "head_sha")}
    return None


def _newest_first_shas(runs: list[Row]) -> list[str]:
    newest: dict[str, float] = {}
    for r in runs:
        if r["head_sha"]:
            at = float(r["dispatched_at"] or r["updated_at"] or 0)
            newest[r["head_sha"]] = max(newest.get(r["head_sha"], 0.0), at)
    return sorted(newest, key=lambda sha: newest[sha], reverse=True)


def _backend(acc: dict[str, dict[str, Any]], repo: str, levels: dict) -> dict[str, Any]:
    if repo not in acc:
        level = levels.get(repo)
        acc[repo] = {
            "repo": repo,
            "level": level[0] if level else None,
            "dispatched_at": None,
            "jobs": [],
        }
    return acc[repo]
