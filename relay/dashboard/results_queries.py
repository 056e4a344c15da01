"""The dashboard's reads of per-test results (thin: SQL in, plain rows out).

Tables of migration 060 (test_failures, test_status) and the job columns it added;
every query is backed by an index (`tests/dashboard/test_query_plans.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay.store.base import Row, Tx

MAX_FAILURES_PER_JOB = 200
_FAILURE = (
    "delivery_id, repo, run_id, run_attempt, job_name, test_key, node_id, outcome, message,"
    " location, duration, shard, head_sha, event_at"
)
_STATUS = (
    "repo, test_key, node_id, history, last_code, last_event_at, last_pass_at, last_pass_sha,"
    " last_pass_delivery, flaky_count, flaky_at, flaky_sha"
)


def failures_of(tx: Tx, delivery_id: str, repo: str) -> list[Row]:
    """The failed tests of every job of (delivery, repo), by job then test id."""
    return tx.fetchall(
        f"SELECT {_FAILURE} FROM test_failures WHERE delivery_id = ? AND repo = ?"
        " ORDER BY run_attempt, job_name, node_id LIMIT ?",
        (delivery_id, repo, MAX_FAILURES_PER_JOB * 10),
    )


def statuses(tx: Tx, repo: str, keys: Sequence[int]) -> dict[int, Row]:
    """test_status rows of `repo` for `keys` (chunks of 500)."""
    found: dict[int, Row] = {}
    unique = sorted(set(keys))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for row in tx.fetchall(
            f"SELECT {_STATUS} FROM test_status WHERE repo = ? AND test_key IN ({marks})",
            (repo, *chunk),
        ):
            found[int(row["test_key"])] = row
    return found


def statuses_of_test(tx: Tx, key: int) -> list[Row]:
    """The test's history on every backend that ran it."""
    return tx.fetchall(
        f"SELECT {_STATUS} FROM test_status WHERE test_key = ? ORDER BY repo", (key,)
    )


def recent_failures_of_test(tx: Tx, repo: str, key: int, limit: int = 20) -> list[Row]:
    return tx.fetchall(
        f"SELECT {_FAILURE} FROM test_failures WHERE repo = ? AND test_key = ?"
        " ORDER BY event_at DESC LIMIT ?",
        (repo, key, limit),
    )


def flaky_tests(tx: Tx, repo: str, since: float, limit: int = 10) -> list[Row]:
    """Tests of `repo` that passed and failed on one upstream SHA since `since`, newest first."""
    return tx.fetchall(
        "SELECT node_id, test_key, flaky_count, flaky_at, flaky_sha FROM test_status"
        " WHERE repo = ? AND flaky_at >= ? ORDER BY flaky_at DESC LIMIT ?",
        (repo, since, limit),
    )


def count_flaky(tx: Tx, repo: str, since: float) -> int:
    return int(
        tx.scalar(
            "SELECT COUNT(*) FROM test_status WHERE repo = ? AND flaky_at >= ?", (repo, since)
        )
        or 0
    )


def failures_matching(tx: Tx, repo: str, text: str, limit: int = 200) -> list[Row]:
    """The newest failures of `repo` whose test id contains `text` (case-insensitive).

    Read newest first through (repo, received_at); the match is a filter on those rows,
    so a search costs at most the backend's failures within the retention period.
    """
    pattern = "%" + text.lower().replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"
    return tx.fetchall(
        "SELECT delivery_id, node_id, test_key, head_sha, event_at, received_at"
        " FROM test_failures WHERE repo = ? AND LOWER(node_id) LIKE ? ESCAPE '!'"
        " ORDER BY received_at DESC LIMIT ?",
        (repo, pattern, limit),
    )


def webhook_payloads(tx: Tx, delivery_ids: Sequence[str]) -> dict[str, Row]:
    """The stored webhook of each delivery (kept for the retention period)."""
    if not delivery_ids:
        return {}
    marks = ", ".join("?" for _ in delivery_ids)
    rows = tx.fetchall(
        f"SELECT delivery_id, event, pr_number, head_sha, payload FROM deliveries"
        f" WHERE delivery_id IN ({marks})",
        tuple(delivery_ids),
    )
    return {str(r["delivery_id"]): r for r in rows}


def echoed_payloads(tx: Tx, repo: str, delivery_ids: Sequence[str]) -> dict[str, Any]:
    """A job's stored callback body per delivery: the slimmed webhook it echoed (the PR
    title outlives the stored webhook)."""
    if not delivery_ids:
        return {}
    marks = ", ".join("?" for _ in delivery_ids)
    rows = tx.fetchall(
        f"SELECT delivery_id, last_payload FROM job_runs WHERE delivery_id IN ({marks})"
        " AND repo = ?",
        (*delivery_ids, repo),
    )
    return {str(r["delivery_id"]): r["last_payload"] for r in rows}


def job_details(tx: Tx, delivery_id: str, repo: str) -> dict[tuple[Any, ...], Row]:
    """run_details (steps, counts, log tail) of each job of (delivery, repo)."""
    rows = tx.fetchall(
        "SELECT run_id, run_attempt, job_name, run_details FROM job_runs"
        " WHERE delivery_id = ? AND repo = ?",
        (delivery_id, repo),
    )
    return {(r["run_id"], r["run_attempt"], r["job_name"]): r for r in rows}
