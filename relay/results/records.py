"""Writing per-test results in the callback's transaction (thin: SQL, plus the pure rules).

A completed callback gets its failure kind (every job, CRCR-only ones too); with a
`run_report`, its failed tests (`test_failures`) and every listed test's outcome in
its history (`test_status`). Statements are multi-row (500 rows each), so a run of
2,000 tests costs a handful of statements. On PostgreSQL the histories of one backend
are updated under a transaction-scoped advisory lock: two jobs of the same backend
completing at once update them one after the other, and no outcome is lost.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from relay.callbacks.body import CallbackBody
from relay.callbacks.records import KEY_WHERE, key_params
from relay.callbacks.state_machine import JobKey
from relay.results import history
from relay.results.classify import Classification, StepOutcome, classify
from relay.results.report import Progress, RunReport
from relay.store import Tx

CHUNK = 500
MAX_STORED_MESSAGE = 4000
_STATUS_COLUMNS = (
    "repo", "test_key", "node_id", "history", "last_code", "last_event_at", "last_pass_at",
    "last_pass_sha", "last_pass_delivery", "flaky_count", "flaky_at", "flaky_sha", "updated_at",
)  # fmt: skip
_FAILURE_COLUMNS = (
    "delivery_id", "repo", "run_id", "run_attempt", "job_name", "test_key", "node_id", "outcome",
    "message", "location", "duration", "shard", "head_sha", "event_at", "received_at",
)  # fmt: skip


def node_key(node_id: str) -> int:
    """A stable number for a test id (first 60 bits of its SHA-256): fits a BIGINT."""
    return int(hashlib.sha256(node_id.encode()).hexdigest()[:15], 16)


def steps_of(report: RunReport | None) -> list[StepOutcome]:
    if report is None:
        return []
    return [StepOutcome(s.job, s.name, s.kind, s.outcome) for s in report.steps]


def classify_report(
    conclusion: str | None,
    report: RunReport | None,
    tests_failed: int | None,
    tests_total: int | None,
) -> Classification:
    failed = tests_failed or 0
    if report is not None and report.tests is not None:
        outcomes = report.tests.outcomes
        failed = max(failed, outcomes.get("failed", 0) + outcomes.get("error", 0))
    return classify(conclusion, steps_of(report), failed, tests_total)


def record_completed(
    tx: Tx,
    key: JobKey,
    conclusion: str | None,
    report: RunReport | None,
    counts: tuple[int | None, int | None],
    event: tuple[float, str | None],
    history_length: int,
    now: float,
) -> Classification:
    """Kind, details, failed tests and histories of a job that just completed.

    `counts` = (failed, total) from CRCR's `test_results`; `event` = (the upstream
    event's time, the tested upstream SHA)."""
    verdict = classify_report(conclusion, report, *counts)
    tx.execute(
        "UPDATE job_runs SET failure_kind = ?, failure_step = ?, legs = ?, run_details = ?"
        f" WHERE {KEY_WHERE}",
        (verdict.kind, verdict.step, _legs(report), _details(report), *key_params(key)),
    )
    if report is not None and report.tests is not None:
        event_at, sha = event
        _save_failures(tx, key, report, sha, event_at, now)
        outcomes = list(_listed_outcomes(report))
        update_histories(tx, key, outcomes, sha, event_at, history_length, now)
    return verdict


def record_callback(
    tx: Tx,
    key: JobKey,
    body: CallbackBody,
    event: tuple[float, str | None],
    history_length: int,
    now: float,
) -> Classification | None:
    """What an accepted callback adds to the job's row: the progress of an in_progress, the
    kind, failed tests and histories of a completed one (its classification)."""
    w = body.workflow
    if w.status != "completed":
        if body.progress is not None:
            record_progress(tx, key, body.progress)
        return None
    tests = w.test_results
    counts = (tests.failed, tests.total) if tests else (None, None)
    return record_completed(
        tx, key, w.conclusion, body.run_report, counts, event, history_length, now
    )


def record_kind(tx: Tx, key: JobKey, verdict: Classification) -> None:
    """Only the kind (the sweeper's verdict on a job that never reported completion)."""
    tx.execute(
        f"UPDATE job_runs SET failure_kind = ?, failure_step = ? WHERE {KEY_WHERE}",
        (verdict.kind, verdict.step, *key_params(key)),
    )


def record_progress(tx: Tx, key: JobKey, progress: Progress) -> None:
    """How far a running job is (an in_progress repeated with `progress`)."""
    tx.execute(
        "UPDATE job_runs SET progress_done = ?, progress_total = ?, progress_step = ?"
        f" WHERE {KEY_WHERE} AND status = 'in_progress'",
        (progress.done, progress.total, progress.step, *key_params(key)),
    )


def _legs(report: RunReport | None) -> str | None:
    if report is None or not report.legs:
        return None
    return json.dumps([leg.model_dump(mode="json") for leg in report.legs])


def _details(report: RunReport | None) -> str | None:
    if report is None:
        return None
    details: dict[str, Any] = {"steps": [s.model_dump(mode="json") for s in report.steps]}
    if report.tests is not None:
        details.update(
            outcomes=report.tests.outcomes,
            truncated=report.tests.truncated,
            junit_url=report.tests.junit_url,
            failures=len(report.tests.failures),
        )
    if report.log_tail is not None:
        details["log_tail"] = report.log_tail.model_dump(mode="json")
    return json.dumps(details)


def _listed_outcomes(report: RunReport) -> Iterator[tuple[str, str]]:
    """(node id, outcome) of every test the report names, failures first (one per id)."""
    assert report.tests is not None
    seen: set[str] = set()
    for failure in report.tests.failures:
        if failure.id not in seen:
            seen.add(failure.id)
            yield failure.id, failure.outcome
    for outcome in ("passed", "xfailed"):
        for node_id in report.tests.results.get(outcome, []):
            if node_id not in seen:
                seen.add(node_id)
                yield node_id, outcome


def _chunks(rows: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(rows), CHUNK):
        yield rows[start : start + CHUNK]


def _insert_many(
    tx: Tx, table: str, columns: Sequence[str], rows: Sequence[tuple[Any, ...]], tail: str
) -> None:
    for chunk in _chunks(rows):
        marks = ", ".join("(" + ", ".join("?" for _ in columns) + ")" for _ in chunk)
        params = [value for row in chunk for value in row]
        tx.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {marks} {tail}", params)


def _save_failures(
    tx: Tx, key: JobKey, report: RunReport, sha: str | None, event_at: float, now: float
) -> None:
    assert report.tests is not None
    rows, seen = [], set()
    for f in report.tests.failures:
        if f.id in seen:
            continue
        seen.add(f.id)
        rows.append(
            (*key_params(key), node_key(f.id), f.id, f.outcome, f.message[:MAX_STORED_MESSAGE],
             f.location, f.duration, f.shard, sha, event_at, now)
        )  # fmt: skip
    _insert_many(tx, "test_failures", _FAILURE_COLUMNS, rows, "ON CONFLICT DO NOTHING")


def _lock_backend(tx: Tx, repo: str) -> None:
    if tx.dialect == "postgres":
        lock = int(hashlib.sha256(f"test_status:{repo}".encode()).hexdigest()[:15], 16)
        tx.scalar("SELECT pg_advisory_xact_lock(?)", (lock,))


def _current(tx: Tx, repo: str, keys: Sequence[int]) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for chunk in _chunks(sorted(set(keys))):
        marks = ", ".join("?" for _ in chunk)
        for row in tx.fetchall(
            "SELECT test_key, history, last_pass_at, last_pass_sha, last_pass_delivery,"
            f" flaky_count, flaky_at, flaky_sha FROM test_status WHERE repo = ? AND test_key IN ({marks})",
            (repo, *chunk),
        ):
            found[int(row["test_key"])] = row
    return found


def update_histories(
    tx: Tx,
    key: JobKey,
    outcomes: Iterable[tuple[str, str]],
    sha: str | None,
    event_at: float,
    limit: int,
    now: float,
) -> None:
    """Add this job's outcome of each test to the test's history on `key.repo`."""
    by_key = {node_key(node_id): (node_id, outcome) for node_id, outcome in outcomes}
    if not by_key:
        return
    _lock_backend(tx, key.repo)
    current = _current(tx, key.repo, list(by_key))
    rows = []
    for tkey in sorted(by_key):
        node_id, outcome = by_key[tkey]
        new = history.entry(event_at, outcome, sha, key.delivery_id, key.run_attempt)
        rows.append(_status_row(key.repo, tkey, node_id, new, current.get(tkey), limit, now))
    updates = ", ".join(f"{c} = excluded.{c}" for c in _STATUS_COLUMNS[2:])
    _insert_many(
        tx,
        "test_status",
        _STATUS_COLUMNS,
        rows,
        f"ON CONFLICT (repo, test_key) DO UPDATE SET {updates}",
    )


def _status_row(
    repo: str,
    tkey: int,
    node_id: str,
    new: history.Entry,
    row: dict[str, Any] | None,
    limit: int,
    now: float,
) -> tuple[Any, ...]:
    row = row or {}
    last_pass = (row.get("last_pass_at"), row.get("last_pass_sha"), row.get("last_pass_delivery"))
    kept, flaky_now = history.add_raw(
        history.raw(row.get("history")), new.as_list(), limit, last_pass[1]
    )
    if new.code == "p" and (last_pass[0] is None or new.at >= float(last_pass[0])):
        last_pass = (new.at, new.sha, new.delivery_id)
    flaky = (int(row.get("flaky_count") or 0), row.get("flaky_at"), row.get("flaky_sha"))
    if flaky_now:
        flaky = (flaky[0] + 1, now, new.sha)
    newest = kept[0]
    encoded = json.dumps(kept, separators=(",", ":"))
    return (repo, tkey, node_id, encoded, newest[1], newest[0], *last_pass, *flaky, now)
