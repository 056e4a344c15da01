"""Page models: the data of each page, as JSON-ready dicts (used by HTML and API alike).

Each function reads through `queries` inside one read transaction and applies
the pure rules (`stats`, `readiness`, `safeurl`, `presentation`). Times are UTC
unix seconds; templates turn them into text with relative ages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from relay.dashboard import queries, readiness
from relay.dashboard.levels import UNLISTED
from relay.dashboard.presentation import LEVEL_ORDER, job_state, look, selection_digest
from relay.dashboard.rollup import Rollups, merge, pass_rate_of
from relay.dashboard.safeurl import allowed_link
from relay.dashboard.stats import median
from relay.store.base import Row, Tx

SUMMARY_DAYS = 7

# (level, since): since is None when only a dispatch record names the level.
LevelInfo = tuple[str, float | None]


def levels_for(tx: Tx, repos: Sequence[str]) -> dict[str, LevelInfo]:
    """Each repository's current level: its allowlist history, else its newest dispatch
    (a repository that left the allowlist keeps no level)."""
    recorded = queries.current_levels(tx)
    levels: dict[str, LevelInfo] = {
        repo: info for repo, info in recorded.items() if info[0] != UNLISTED
    }
    for repo in repos:
        if repo not in recorded:
            level = queries.dispatched_level(tx, repo)
            if level is not None:
                levels[repo] = (level, None)
    return levels


def overview(tx: Tx, now: float, rollups: Rollups) -> dict[str, Any]:
    repos = queries.backend_repos(tx)
    levels = levels_for(tx, repos)
    backends = [backend_summary(tx, repo, levels.get(repo), now, rollups) for repo in repos]
    grouped = []
    for level in (*LEVEL_ORDER, None):
        members = [b for b in backends if b["level"] == level]
        if members:
            grouped.append({"level": level or "unlisted", "backends": members})
    return {"now": now, "levels": grouped, "health": queries.relay_health(tx)}


def backend_summary(
    tx: Tx, repo: str, level: LevelInfo | None, now: float, rollups: Rollups
) -> dict[str, Any]:
    days = [d for _, d in rollups.daily(tx, repo, now, 14)]
    week = merge(days[-SUMMARY_DAYS:])
    return {
        "repo": repo,
        "level": level[0] if level else None,
        "level_since": level[1] if level else None,
        "pass_7d": week.pass_rate.as_dict(),
        "pass_14d": pass_rate_of(days).as_dict(),
        "median_queue_7d": median(week.queue),
        "median_execution_7d": median(week.execution),
        # counted apart: left out of the pass rates and the L3 criteria
        "infrastructure_7d": week.infrastructure,
        "last": _last(queries.last_result(tx, repo)),
    }


def _last(row: Row | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "conclusion": row["conclusion"],
        "completed_at": row["completed_at"],
        "job": _job_key(row),
        "event_type": row["event_type"],
        "pr_number": row["pr_number"],
        "head_sha": row["head_sha"],
        "change_url": change_url(row["pr_number"], row["head_sha"]),
    }


def readiness_for(
    tx: Tx, repo: str, level: LevelInfo | None, now: float, rollups: Rollups
) -> dict[str, Any]:
    figures = rollups.window(tx, repo, now, readiness.WINDOW_DAYS).figures()
    result = readiness.evaluate(
        level[0] if level else None, level[1] if level else None, figures, now
    )
    return result.as_dict()


def readiness_table(tx: Tx, now: float, rollups: Rollups) -> dict[str, Any]:
    repos = queries.backend_repos(tx)
    levels = levels_for(tx, repos)
    rows = [
        {
            "repo": repo,
            "level": levels.get(repo, (None,))[0],
            **readiness_for(tx, repo, levels.get(repo), now, rollups),
        }
        for repo in repos
    ]
    rows.sort(key=lambda r: (level_rank(r["level"]), r["repo"]))
    return {"now": now, "window_days": readiness.WINDOW_DAYS, "backends": rows}


def level_rank(level: str | None) -> int:
    """L4 first, unlisted last."""
    return LEVEL_ORDER.index(level) if level in LEVEL_ORDER else len(LEVEL_ORDER)


def _job_key(row: Row) -> str:
    workflow = row.get("workflow_name")
    return f"{workflow} / {row['job_name']}" if workflow else str(row["job_name"])


def job_cell(row: Row) -> dict[str, Any]:
    """One job as shown in grids and change pages; only safe links survive."""
    state = job_state(row["status"], row["conclusion"], row.get("failure_kind"))
    repo = str(row["repo"])
    return {
        "job": _job_key(row),
        "delivery_id": row["delivery_id"],
        "job_name": row["job_name"],
        "workflow_name": row["workflow_name"],
        "run_id": row["run_id"],
        "run_attempt": row["run_attempt"],
        "state": state,
        "state_label": look(state).label,
        "status": row["status"],
        "conclusion": row["conclusion"],
        "queue_time": row["queue_time"],
        "execution_time": row["execution_time"],
        "started_at": row["in_progress_received_at"] or row["started_at"],
        "completed_at": row["completed_received_at"] or row["completed_at"],
        "url": allowed_link(row["url"], repo),
        "artifact_url": allowed_link(row["artifact_url"], repo),
        "tests": _tests(row),
        "selection_id": row["selection_id"],
        "failure_kind": row.get("failure_kind"),
        "failure_step": row.get("failure_step"),
        "progress": _progress(row),
        "legs": legs_of(row.get("legs")),
    }


def _progress(row: Row) -> dict[str, Any] | None:
    if row.get("status") != "in_progress" or not row.get("progress_total"):
        return None
    return {
        "done": int(row["progress_done"] or 0),
        "total": int(row["progress_total"]),
        "step": row.get("progress_step"),
    }


def legs_of(text: str | None) -> list[dict[str, Any]]:
    """A job's legs (shards) as stored: `[{name, conclusion, tests}]`, read defensively."""
    try:
        raw = json.loads(text) if text else []
    except ValueError:
        return []
    legs = []
    for leg in raw if isinstance(raw, list) else []:
        if isinstance(leg, dict) and isinstance(leg.get("name"), str):
            tests = leg.get("tests") if isinstance(leg.get("tests"), dict) else None
            legs.append(
                {
                    "name": leg["name"][:200],
                    "conclusion": str(leg.get("conclusion") or "neutral")[:40],
                    "tests": {k: int(v) for k, v in tests.items() if isinstance(v, int)}
                    if tests
                    else None,
                }
            )
    return legs


def _tests(row: Row) -> dict[str, int] | None:
    if row["tests_total"] is None:
        return None
    return {k: int(row[f"tests_{k}"] or 0) for k in ("passed", "failed", "skipped", "total")}


def latest_attempts(rows: Sequence[Row]) -> list[Row]:
    """Keep only the newest attempt of each (delivery, run, job): a re-run replaces it."""
    newest: dict[tuple[Any, ...], Row] = {}
    for row in rows:
        key = (row["delivery_id"], row["repo"], row["workflow_name"], row["job_name"])
        if key not in newest or _attempt_order(row) > _attempt_order(newest[key]):
            newest[key] = row
    return list(newest.values())


def _attempt_order(row: Row) -> tuple[float, int]:
    return (float(row["updated_at"] or 0), int(row["run_attempt"] or 0))


def change_url(pr_number: int | None, head_sha: str | None) -> str | None:
    if pr_number:
        return f"/crcr/pr/{int(pr_number)}"
    if head_sha:
        return f"/crcr/commit/{head_sha}"
    return None


def selection_for(tx: Tx, selection_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    found = queries.selection_summaries(tx, sorted(set(selection_ids)))
    return {
        sid: {
            "selection_id": sid,
            "has_html": bool(row["has_html"]),
            "created_at": row["created_at"],
            **selection_digest(row["summary"]),
        }
        for sid, row in found.items()
    }
