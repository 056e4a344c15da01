"""The dashboard's reads from the relay store (thin: SQL in, plain rows out).

Windows ("the last 7 days") are on `completed_received_at`, the relay's own clock
(the `completed_at` a downstream reports is optional and not trusted), which the
sweeper also sets when it times a job out.

Every query is written for both SQLite and PostgreSQL (`?` placeholders, the
store rewrites them) and is backed by an index from migration 080 or the
contract's own; `bench/bench_dashboard.py` prints their query plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay.store.base import Row, Tx


def backend_repos(tx: Tx) -> list[str]:
    """Every downstream repository with a level, a dispatch or a job.

    Distinct repositories come from index skip-scans (one index probe per
    repository, not a scan of every row), which both dialects run as written.
    """
    found = {str(r["repo"]) for r in tx.fetchall("SELECT DISTINCT repo FROM repo_levels")}
    for table in ("job_runs", "dispatches"):
        rows = tx.fetchall(
            "WITH RECURSIVE seen(repo) AS ("
            f" SELECT MIN(repo) FROM {table}"
            " UNION ALL"
            f" SELECT (SELECT MIN(t.repo) FROM {table} t WHERE t.repo > seen.repo)"
            " FROM seen WHERE seen.repo IS NOT NULL)"
            " SELECT repo FROM seen WHERE repo IS NOT NULL"
        )
        found.update(str(r["repo"]) for r in rows)
    return sorted(found)


def current_levels(tx: Tx) -> dict[str, tuple[str, float]]:
    """repo -> (level, since) of its newest allowlist entry, and since when it holds it.

    `since` is the start of the current uninterrupted stint at that level, so a
    backend that went L2 → L1 → L2 counts its time at L2 from the second start.
    """
    history: dict[str, list[tuple[float, str]]] = {}
    for row in tx.fetchall("SELECT repo, since, level FROM repo_levels ORDER BY repo, since"):
        history.setdefault(row["repo"], []).append((float(row["since"]), str(row["level"])))
    result: dict[str, tuple[str, float]] = {}
    for repo, entries in history.items():
        level, since = entries[-1][1], entries[-1][0]
        for at, lvl in reversed(entries):
            if lvl != level:
                break
            since = at
        result[repo] = (level, since)
    return result


def dispatched_level(tx: Tx, repo: str) -> str | None:
    """The level recorded with the newest dispatch: the fallback when a repository has
    no `repo_levels` history (then the time at that level is unknown)."""
    row = tx.fetchone(
        "SELECT level FROM dispatches WHERE repo = ? ORDER BY dispatched_at DESC LIMIT 1",
        (repo,),
    )
    return None if row is None or row["level"] is None else str(row["level"])


def last_result(tx: Tx, repo: str) -> Row | None:
    return tx.fetchone(
        "SELECT conclusion, completed_received_at AS completed_at, job_name, workflow_name, head_sha, pr_number,"
        " event_type FROM job_runs WHERE repo = ? AND completed_received_at IS NOT NULL"
        " ORDER BY completed_received_at DESC LIMIT 1",
        (repo,),
    )


def relay_health(tx: Tx) -> Row:
    backlog = tx.fetchone(
        "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox"
        " WHERE state = 'pending' AND kind = 'dispatch'"
    )
    pending = tx.fetchone(
        "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox WHERE state = 'pending'"
    )
    return {
        "dispatch_backlog": int((backlog or {}).get("n") or 0),
        "oldest_dispatch_at": (backlog or {}).get("oldest"),
        "pending_jobs": int((pending or {}).get("n") or 0),
        "oldest_job_at": (pending or {}).get("oldest"),
        "dead_letters": int(tx.scalar("SELECT COUNT(*) FROM dead_letters") or 0),
        "last_webhook_at": tx.scalar("SELECT MAX(received_at) FROM deliveries"),
        "oldest_running_since": tx.scalar(
            "SELECT MIN(in_progress_received_at) FROM job_runs WHERE status = 'in_progress'"
        ),
    }


# --- one backend's grid -------------------------------------------------------------

GRID_COLUMNS = (
    "delivery_id, repo, run_id, run_attempt, job_name, workflow_name, event_type, pr_number,"
    " head_sha, status, conclusion, url, artifact_url, started_at, completed_at, dispatched_at,"
    " in_progress_received_at, completed_received_at,"
    " queue_time, execution_time, tests_passed, tests_failed, tests_skipped, tests_total,"
    " selection_id, updated_at, failure_kind, failure_step, legs, progress_done, progress_total,"
    " progress_step"
)


def recent_dispatches(
    tx: Tx, repo: str, event_types: Sequence[str], limit: int, before: float | None = None
) -> list[Row]:
    """The newest upstream events dispatched to `repo` (rows of the grid); with `before`,
    those dispatched before it (the next page)."""
    sql = (
        "SELECT delivery_id, event_type, pr_number, head_sha, dispatched_at AS at"
        " FROM dispatches WHERE repo = ?"
    )
    params: list[Any] = [repo]
    if event_types:
        sql += f" AND event_type IN ({', '.join('?' for _ in event_types)})"
        params.extend(event_types)
    if before is not None:
        sql += " AND dispatched_at < ?"
        params.append(before)
    sql += " ORDER BY dispatched_at DESC LIMIT ?"
    return tx.fetchall(sql, (*params, limit))


def recent_job_events(
    tx: Tx,
    repo: str,
    event_types: Sequence[str],
    conclusion: str | None,
    limit: int,
    before: float | None = None,
    kind: str | None = None,
) -> list[Row]:
    """Newest events known from job_runs alone: nightly/periodic runs (no dispatch record),
    or, with a conclusion (or failure kind) filter, the events that have a job with it.

    Reads the newest matching job rows through (repo, conclusion|failure_kind|event_type,
    updated_at) and groups them here: a GROUP BY in SQL would make the planner walk the
    primary key.
    """
    rows: list[Row] = []
    # One query per event type: an equality keeps the index order, an IN would need a sort
    # (or a walk through every row of the repository).
    for event_type in list(event_types) or [""]:
        sql = "SELECT delivery_id, event_type, pr_number, head_sha, updated_at FROM job_runs"
        sql += " WHERE repo = ?"
        params: list[Any] = [repo]
        if kind:
            sql += " AND failure_kind = ?"
            params.append(kind)
        if conclusion:
            sql += " AND conclusion = ?"
            params.append(conclusion)
        if event_type:
            sql += " AND event_type = ?"
            params.append(event_type)
        if before is not None:
            sql += " AND updated_at < ?"
            params.append(before)
        sql += " ORDER BY updated_at DESC LIMIT ?"
        rows += tx.fetchall(sql, (*params, limit * JOBS_PER_EVENT_BOUND))
    events: dict[str, Row] = {}
    for row in sorted(rows, key=lambda r: r["updated_at"], reverse=True):
        if row["delivery_id"] not in events:
            events[row["delivery_id"]] = {**row, "at": row["updated_at"]}
        if len(events) == limit:
            break
    return list(events.values())


# Job rows read per wanted grid row by `recent_job_events`: an event with more jobs
# than this may push older events off a filtered grid, never show wrong data.
JOBS_PER_EVENT_BOUND = 50


def job_runs_for(tx: Tx, repo: str, delivery_ids: Sequence[str]) -> list[Row]:
    if not delivery_ids:
        return []
    marks = ", ".join("?" for _ in delivery_ids)
    return tx.fetchall(
        f"SELECT {GRID_COLUMNS} FROM job_runs WHERE delivery_id IN ({marks}) AND repo = ?"
        " ORDER BY job_name, run_attempt",
        (*delivery_ids, repo),
    )


# --- one upstream change ------------------------------------------------------------


def dispatches_of_pr(tx: Tx, repo: str, number: int, limit: int) -> list[Row]:
    """Grid rows of one PR on one backend (the backend page's search)."""
    return tx.fetchall(
        "SELECT delivery_id, event_type, pr_number, head_sha, dispatched_at AS at"
        " FROM dispatches WHERE pr_number = ? AND repo = ? ORDER BY dispatched_at DESC LIMIT ?",
        (number, repo, limit),
    )


def events_of_sha(tx: Tx, repo: str, sha_prefix: str, limit: int) -> list[Row]:
    """Grid rows of one upstream commit (SHA prefix) on one backend: dispatched events and
    nightly/periodic runs."""
    dispatched = tx.fetchall(
        "SELECT delivery_id, event_type, pr_number, head_sha, dispatched_at AS at"
        " FROM dispatches WHERE head_sha >= ? AND head_sha < ? AND repo = ?"
        " ORDER BY dispatched_at DESC LIMIT ?",
        (sha_prefix, sha_prefix + "g", repo, limit),
    )
    return dispatched + events_of_deliveries(
        tx,
        repo,
        [
            r["delivery_id"]
            for r in tx.fetchall(
                "SELECT delivery_id FROM job_runs WHERE head_sha >= ? AND head_sha < ?"
                " AND repo = ? LIMIT ?",
                (sha_prefix, sha_prefix + "g", repo, limit),
            )
        ],
    )


def events_of_deliveries(tx: Tx, repo: str, delivery_ids: Sequence[str]) -> list[Row]:
    """Grid rows from the jobs of these deliveries (newest job of each)."""
    if not delivery_ids:
        return []
    unique = sorted(set(delivery_ids))
    marks = ", ".join("?" for _ in unique)
    rows = tx.fetchall(
        "SELECT delivery_id, event_type, pr_number, head_sha, dispatched_at, updated_at"
        f" FROM job_runs WHERE delivery_id IN ({marks}) AND repo = ?",
        (*unique, repo),
    )
    events: dict[str, Row] = {}
    for row in rows:
        at = row["dispatched_at"] or row["updated_at"]
        if row["delivery_id"] not in events or at > events[row["delivery_id"]]["at"]:
            events[row["delivery_id"]] = {**row, "at": at}
    return list(events.values())


def job_runs_for_pr(tx: Tx, number: int) -> list[Row]:
    return tx.fetchall(
        f"SELECT {GRID_COLUMNS} FROM job_runs WHERE pr_number = ? ORDER BY repo, updated_at DESC",
        (number,),
    )


def job_runs_for_sha(tx: Tx, sha_prefix: str) -> list[Row]:
    # A range instead of LIKE so that both dialects use the head_sha index.
    return tx.fetchall(
        f"SELECT {GRID_COLUMNS} FROM job_runs WHERE head_sha >= ? AND head_sha < ?"
        " ORDER BY repo, updated_at DESC",
        (sha_prefix, sha_prefix + "g"),
    )


def job_runs_for_delivery(tx: Tx, delivery_id: str) -> list[Row]:
    return tx.fetchall(
        f"SELECT {GRID_COLUMNS} FROM job_runs WHERE delivery_id = ? ORDER BY repo, updated_at DESC",
        (delivery_id,),
    )


def dispatches_for_delivery(tx: Tx, delivery_id: str) -> list[Row]:
    return tx.fetchall(
        "SELECT delivery_id, repo, level, event_type, pr_number, head_sha, dispatched_at"
        " FROM dispatches WHERE delivery_id = ? ORDER BY dispatched_at DESC",
        (delivery_id,),
    )


def dispatches_for_pr(tx: Tx, number: int) -> list[Row]:
    return tx.fetchall(
        "SELECT delivery_id, repo, level, event_type, pr_number, head_sha, dispatched_at"
        " FROM dispatches WHERE pr_number = ? ORDER BY dispatched_at DESC",
        (number,),
    )


def dispatches_for_sha(tx: Tx, sha_prefix: str) -> list[Row]:
    return tx.fetchall(
        "SELECT delivery_id, repo, level, event_type, pr_number, head_sha, dispatched_at"
        " FROM dispatches WHERE head_sha >= ? AND head_sha < ? ORDER BY dispatched_at DESC",
        (sha_prefix, sha_prefix + "g"),
    )


def upstream_delivery_for_pr(tx: Tx, number: int) -> Row | None:
    return tx.fetchone(
        "SELECT event, pr_number, head_sha, payload FROM deliveries"
        " WHERE pr_number = ? AND event = 'pull_request' ORDER BY received_at DESC LIMIT 1",
        (number,),
    )


def upstream_delivery_for_sha(tx: Tx, sha_prefix: str) -> Row | None:
    return tx.fetchone(
        "SELECT event, pr_number, head_sha, payload FROM deliveries"
        " WHERE head_sha >= ? AND head_sha < ? ORDER BY received_at DESC LIMIT 1",
        (sha_prefix, sha_prefix + "g"),
    )


def upstream_delivery(tx: Tx, delivery_id: str) -> Row | None:
    return tx.fetchone(
        "SELECT event, pr_number, head_sha, payload FROM deliveries WHERE delivery_id = ?",
        (delivery_id,),
    )


def selection_summaries(tx: Tx, selection_ids: Sequence[str]) -> dict[str, Row]:
    if not selection_ids:
        return {}
    marks = ", ".join("?" for _ in selection_ids)
    rows = tx.fetchall(
        "SELECT selection_id, summary, repo, delivery_id, created_at,"
        " CASE WHEN html IS NULL THEN 0 ELSE 1 END AS has_html"
        f" FROM selection_reports WHERE selection_id IN ({marks})",
        tuple(selection_ids),
    )
    return {str(r["selection_id"]): r for r in rows}


def selection_report(tx: Tx, selection_id: str) -> Row | None:
    return tx.fetchone(
        "SELECT selection_id, summary, html, repo, delivery_id, created_at"
        " FROM selection_reports WHERE selection_id = ?",
        (selection_id,),
    )
