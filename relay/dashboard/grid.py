"""Page models of one backend (the grid) and of one upstream change (PR or commit)."""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import quote

from relay.dashboard import queries, upstream
from relay.dashboard.presentation import EVENT_FILTERS
from relay.dashboard.rollup import Rollups
from relay.dashboard.views import (
    backend_summary,
    change_url,
    job_cell,
    latest_attempts,
    level_rank,
    levels_for,
    readiness_for,
    selection_for,
)
from relay.store.base import Row, Tx

GRID_ROWS = 40
GRID_COLUMNS = 14


def backend_page(
    tx: Tx, repo: str, now: float, event: str | None, conclusion: str | None, rollups: Rollups
) -> dict[str, Any]:
    level = levels_for(tx, [repo]).get(repo)
    event_types = EVENT_FILTERS.get(event or "", ())
    events = _grid_events(tx, repo, event_types, conclusion)
    runs = latest_attempts(queries.job_runs_for(tx, repo, [e["delivery_id"] for e in events]))
    columns = _columns(runs)
    by_cell = {(r["delivery_id"], _column(r)): job_cell(r) for r in runs}
    rows = [
        {
            "delivery_id": e["delivery_id"],
            "event_type": e["event_type"],
            "pr_number": e["pr_number"],
            "head_sha": e["head_sha"],
            "at": e["at"],
            "change_url": change_url(e["pr_number"], e["head_sha"])
            or f"/crcr/deliveries/{quote(e['delivery_id'], safe='')}",
            "details_url": f"/crcr/deliveries/{quote(e['delivery_id'], safe='')}"
            f"?repo={quote(repo, safe='')}",
            "cells": [by_cell.get((e["delivery_id"], c)) for c in columns],
        }
        for e in events
    ]
    return {
        "now": now,
        "repo": repo,
        "known": level is not None or bool(rows) or _has_jobs(tx, repo),
        "filters": {"event": event, "conclusion": conclusion},
        "summary": backend_summary(tx, repo, level, now, rollups),
        "readiness": readiness_for(tx, repo, level, now, rollups),
        "columns": columns,
        "rows": rows,
        "dead_letters": _dead_dispatches(tx, repo),
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
    tx: Tx, repo: str, event_types: tuple[str, ...], conclusion: str | None
) -> list[Row]:
    """Newest events first: dispatched ones, plus nightly/periodic runs (never dispatched)."""
    if conclusion:
        return queries.recent_job_events(tx, repo, event_types, conclusion, GRID_ROWS)
    events = []
    if not event_types or set(event_types) - {"nightly", "periodic"}:
        events = queries.recent_dispatches(tx, repo, event_types, GRID_ROWS)
    scheduled = [t for t in event_types or ("nightly", "periodic") if t in ("nightly", "periodic")]
    if scheduled:
        events += queries.recent_job_events(tx, repo, scheduled, None, GRID_ROWS)
    unique = {e["delivery_id"]: e for e in sorted(events, key=lambda e: e["at"] or 0)}
    return sorted(unique.values(), key=lambda e: e["at"] or 0, reverse=True)[:GRID_ROWS]


def _column(row: Row) -> str:
    workflow = row["workflow_name"]
    return f"{workflow} / {row['job_name']}" if workflow else str(row["job_name"])


def _columns(runs: list[Row]) -> list[str]:
    """The most frequent jobs, alphabetically, so that columns stay stable between loads."""
    counts = Counter(_column(r) for r in runs)
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
        _backend(backends, r["repo"], levels)["jobs"].append(cell)
    return {
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
