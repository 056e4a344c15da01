"""Reading and writing the callback tables (job_runs, dispatches, selection_reports).

Thin: SQL only, inside the caller's transaction. The decisions live in
``state_machine``; the order of checks in ``service``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from relay.callbacks.body import CallbackBody, iso_seconds
from relay.callbacks.state_machine import JobKey, JobState
from relay.json_body import BIGINT_MAX
from relay.results.classify import swept_kind
from relay.store import Row, Tx

KEY_WHERE = "delivery_id = ? AND repo = ? AND run_id = ? AND run_attempt = ? AND job_name = ?"


@dataclass(frozen=True)
class Dispatch:
    delivery_id: str
    repo: str
    level: str | None
    event_type: str
    pr_number: int | None
    head_sha: str | None
    labels: tuple[str, ...]
    dispatched_at: float
    callback_token_id: str | None


def key_params(key: JobKey) -> tuple[Any, ...]:
    return (key.delivery_id, key.repo, key.run_id, key.run_attempt, key.job_name)


def load_dispatch(tx: Tx, delivery_id: str, repo: str, *, lock: bool = False) -> Dispatch | None:
    """The DISPATCHED record; ``lock`` holds it (PostgreSQL) against a concurrent label backfill.

    A shared lock: the callbacks of a matrix (same dispatch) do not wait for each
    other, while the label backfill's UPDATE waits for them and they for it.
    """
    suffix = " FOR SHARE" if lock and tx.dialect == "postgres" else ""
    row = tx.fetchone(
        f"SELECT * FROM dispatches WHERE delivery_id = ? AND LOWER(repo) = LOWER(?){suffix}",
        (delivery_id, repo),
    )
    if row is None:
        return None
    labels = json.loads(row["labels"]) if row.get("labels") else []
    return Dispatch(
        delivery_id=row["delivery_id"],
        repo=row["repo"],
        level=row.get("level"),
        event_type=row["event_type"],
        pr_number=_int(row.get("pr_number")),
        head_sha=row.get("head_sha"),
        labels=tuple(str(label) for label in labels),
        dispatched_at=float(row["dispatched_at"]),
        callback_token_id=row.get("callback_token_id"),
    )


def recording_dispatch(tx: Tx, delivery_id: str, repo: str) -> bool:
    """A dispatch job of (delivery, repo) is still open (sent, or about to be)."""
    row = tx.fetchone(
        "SELECT 1 AS open FROM outbox WHERE kind = 'dispatch' AND state = 'pending'"
        " AND delivery_id = ? AND LOWER(target) = LOWER(?)",
        (delivery_id, repo),
    )
    return row is not None


def load_job(tx: Tx, key: JobKey, *, lock: bool = False) -> tuple[JobState, Row] | None:
    """The job's state; ``lock`` holds its row (PostgreSQL) until the transaction ends."""
    suffix = " FOR UPDATE" if lock and tx.dialect == "postgres" else ""
    row = tx.fetchone(f"SELECT * FROM job_runs WHERE {KEY_WHERE}{suffix}", key_params(key))
    if row is None:
        return None
    return state_of(row), row


def state_of(row: Row) -> JobState:
    return JobState(
        status=row["status"],
        check_run_id=_check_run_ref(row),
        conclusion=row.get("conclusion"),
        dispatched_at=_float(row.get("dispatched_at")),
        in_progress_received_at=_float(row.get("in_progress_received_at")),
        completed_received_at=_float(row.get("completed_received_at")),
        queue_time=_float(row.get("queue_time")),
        execution_time=_float(row.get("execution_time")),
        in_progress_digest=row.get("in_progress_digest"),
        completed_digest=row.get("completed_digest"),
        swept=row.get("swept_at") is not None,
    )


def save_job(
    tx: Tx,
    key: JobKey,
    state: JobState,
    body: CallbackBody,
    facts: JobFacts,
    now: float,
    *,
    first: bool = False,
) -> bool:
    """Insert or update the job's row with the state and the reported result.

    ``first``: the job had no row when we looked; insert only, and return False if a
    concurrent callback inserted it meanwhile (the caller then decides again).
    """
    w = body.workflow
    tests = w.test_results
    columns: dict[str, Any] = {
        "workflow_name": w.name,
        "event_type": body.event_type,
        "pr_number": facts.pr_number,
        "head_sha": facts.head_sha,
        "status": state.status,
        "conclusion": state.conclusion,
        "check_run_id": _int_or_none(state.check_run_id),
        "check_run_ref": state.check_run_id,
        "url": w.url,
        "artifact_url": w.artifact_url,
        "started_at": iso_seconds(w.started_at) if w.started_at else None,
        "completed_at": iso_seconds(w.completed_at) if w.completed_at else None,
        "dispatched_at": state.dispatched_at,
        "in_progress_received_at": state.in_progress_received_at,
        "completed_received_at": state.completed_received_at,
        "queue_time": state.queue_time,
        "execution_time": state.execution_time,
        "tests_passed": tests.passed if tests else None,
        "tests_failed": tests.failed if tests else None,
        "tests_skipped": tests.skipped if tests else None,
        "tests_total": tests.total if tests else None,
        "selection_id": facts.selection_id,
        "last_payload": json.dumps(body.for_storage(facts.selection_id), separators=(",", ":")),
        "updated_at": now,
        "in_progress_digest": state.in_progress_digest,
        "completed_digest": state.completed_digest,
        "callback_token_id": facts.callback_token_id,
        "identity": facts.identity,
    }
    return _upsert(tx, key, columns, first)


@dataclass(frozen=True)
class JobFacts:
    """What the job row needs besides the state: from the dispatch and the caller."""

    pr_number: int | None
    head_sha: str | None
    selection_id: str | None
    callback_token_id: str | None
    identity: str


# Reported once and sent as null by the other step (CRCR's action sends started_at only
# with in_progress): a later callback without them keeps what an earlier one reported.
_KEPT_WHEN_NOT_SENT = frozenset({"started_at", "completed_at", "artifact_url"})


def _upsert(tx: Tx, key: JobKey, columns: dict[str, Any], insert_only: bool) -> bool:
    keep_selection = columns["selection_id"] is None
    if keep_selection:
        del columns["selection_id"]  # an earlier step's report stays linked
    names = list(columns)
    all_names = ["delivery_id", "repo", "run_id", "run_attempt", "job_name", *names]
    marks = ", ".join("?" for _ in all_names)
    updates = ", ".join(
        f"{n} = COALESCE(excluded.{n}, job_runs.{n})"
        if n in _KEPT_WHEN_NOT_SENT
        else f"{n} = excluded.{n}"
        for n in names
    )
    on_conflict = "DO NOTHING" if insert_only else f"DO UPDATE SET {updates}"
    changed = tx.execute(
        f"INSERT INTO job_runs ({', '.join(all_names)}) VALUES ({marks})"
        f" ON CONFLICT (delivery_id, repo, run_id, run_attempt, job_name) {on_conflict}",
        (*key_params(key), *columns.values()),
    )
    return changed == 1


def mark_swept(tx: Tx, key: JobKey, state: JobState, now: float) -> bool:
    """The sweeper's write; only if the job is still in progress (another writer may win)."""
    verdict = swept_kind(state.conclusion)
    changed = tx.execute(
        "UPDATE job_runs SET status = ?, conclusion = ?, completed_received_at = ?,"
        " execution_time = ?, swept_at = ?, updated_at = ?, failure_kind = ?, failure_step = ?"
        f" WHERE {KEY_WHERE} AND status = 'in_progress'",
        (
            state.status,
            state.conclusion,
            state.completed_received_at,
            state.execution_time,
            now,
            now,
            verdict.kind,
            verdict.step,
            *key_params(key),
        ),
    )
    return changed == 1


def save_selection(tx: Tx, selection_id: str, body: CallbackBody, repo: str, now: float) -> None:
    report = body.selection
    assert report is not None
    tx.execute(
        "INSERT INTO selection_reports (selection_id, summary, html, repo, delivery_id,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (selection_id) DO UPDATE SET"
        " summary = excluded.summary, html = excluded.html",
        (selection_id, json.dumps(report.summary), report.html, repo, body.delivery_id, now),
    )


def load_job_row(tx: Tx, key: JobKey) -> Row | None:
    return tx.fetchone(f"SELECT * FROM job_runs WHERE {KEY_WHERE}", key_params(key))


def key_to_list(key: JobKey) -> list[Any]:
    return [key.delivery_id, key.repo, key.run_id, key.run_attempt, key.job_name]


def key_from_list(value: list[Any]) -> JobKey:
    return JobKey(str(value[0]), str(value[1]), int(value[2]), int(value[3]), str(value[4]))


def key_text(key: JobKey) -> str:
    return "/".join(str(p) for p in key_to_list(key))


def key_of(row: Row) -> JobKey:
    return JobKey(
        delivery_id=row["delivery_id"],
        repo=row["repo"],
        run_id=int(row["run_id"]),
        run_attempt=int(row["run_attempt"]),
        job_name=row["job_name"],
    )


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _check_run_ref(row: Row) -> str | None:
    """The job's check run id as text (rows from before migration 052 have only the number)."""
    ref = row.get("check_run_ref")
    if ref is not None:
        return str(ref)
    number = row.get("check_run_id")
    return None if number is None else str(number)


def _int_or_none(check_run_ref: str | None) -> int | None:
    """A numeric check run id (GitHub's) for the BIGINT column; a fallback id, or a number
    too large for the column, has none (check_run_ref keeps it as text)."""
    if not check_run_ref or not check_run_ref.isdecimal():
        return None
    number = int(check_run_ref)
    return number if number <= BIGINT_MAX else None
