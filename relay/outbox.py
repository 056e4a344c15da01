"""The durable outbox: enqueue, claim with a lease, complete, retry, dead-letter.

Every kind of work (dispatch, hud, check_run, ...) goes through the same table.
A claim increments `attempts` and moves `next_attempt_at` to the end of the
lease, so a job whose worker died becomes claimable again when the lease
expires, with no sweeper. Completion only succeeds for the lease owner.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from relay.store import Row, Store, Tx

_COLUMNS = (
    "job_id, kind, dedupe_key, delivery_id, target, body, state, attempts, next_attempt_at,"
    " lease_owner, lease_expires_at, last_error, created_at, done_at, first_failed_at"
)


@dataclass(frozen=True)
class Job:
    job_id: str
    kind: str
    dedupe_key: str
    delivery_id: str | None
    target: str
    body: dict[str, Any]
    attempts: int
    created_at: float
    lease_owner: str | None = None
    last_error: str | None = None
    first_failed_at: float | None = None  # when its first attempt failed (None: never failed)

    @classmethod
    def from_row(cls, row: Row) -> Job:
        return cls(
            job_id=row["job_id"],
            kind=row["kind"],
            dedupe_key=row["dedupe_key"],
            delivery_id=row["delivery_id"],
            target=row["target"],
            body=json.loads(row["body"]),
            attempts=int(row["attempts"]),
            created_at=float(row["created_at"]),
            lease_owner=row.get("lease_owner"),
            last_error=row.get("last_error"),
            first_failed_at=_float_or_none(row.get("first_failed_at")),
        )


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def enqueue(
    tx: Tx,
    *,
    kind: str,
    target: str,
    body: dict[str, Any],
    dedupe_key: str,
    now: float,
    delivery_id: str | None = None,
    not_before: float | None = None,
) -> bool:
    """Add a job inside the caller's transaction. False if `dedupe_key` was already queued."""
    changed = tx.execute(
        "INSERT INTO outbox (job_id, kind, dedupe_key, delivery_id, target, body, state,"
        " attempts, next_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?)"
        " ON CONFLICT (dedupe_key) DO NOTHING",
        (
            uuid.uuid4().hex,
            kind,
            dedupe_key,
            delivery_id,
            target,
            json.dumps(body, separators=(",", ":")),
            now if not_before is None else max(now, not_before),
            now,
        ),
    )
    return changed == 1


def claim(
    store: Store,
    *,
    owner: str,
    kinds: Sequence[str],
    now: float,
    lease_seconds: float,
    limit: int = 1,
) -> list[Job]:
    """Lease up to `limit` ready jobs of the given kinds to `owner`, oldest first."""
    marks = ", ".join("?" for _ in kinds)
    # An idle worker polls often: look first in a read-only transaction, so that
    # polling never takes the write lock that webhook ingest needs.
    with store.transaction(write=False) as tx:
        ready = tx.fetchone(
            f"SELECT job_id FROM outbox WHERE state = 'pending' AND kind IN ({marks})"
            " AND next_attempt_at <= ? LIMIT 1",
            (*kinds, now),
        )
    if ready is None:
        return []
    with store.transaction() as tx:
        ids = tx.fetchall(
            f"SELECT job_id FROM outbox WHERE state = 'pending' AND kind IN ({marks})"
            f" AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?{tx.skip_locked}",
            (*kinds, now, limit),
        )
        jobs = []
        for row in ids:
            leased = tx.fetchone(
                "UPDATE outbox SET lease_owner = ?, lease_expires_at = ?, next_attempt_at = ?,"
                f" attempts = attempts + 1 WHERE job_id = ? RETURNING {_COLUMNS}",
                (owner, now + lease_seconds, now + lease_seconds, row["job_id"]),
            )
            if leased is not None:
                jobs.append(Job.from_row(leased))
    return jobs


def complete(
    store: Store,
    job: Job,
    *,
    owner: str,
    now: float,
    also: Callable[[Tx], None] | None = None,
) -> bool:
    """Mark a leased job done (and run `also` in the same transaction).

    False when the lease was lost to another worker: then nothing is written.
    """
    with store.transaction() as tx:
        changed = tx.execute(
            "UPDATE outbox SET state = 'done', done_at = ?, lease_owner = NULL,"
            " lease_expires_at = NULL, last_error = NULL"
            " WHERE job_id = ? AND lease_owner = ? AND state = 'pending'",
            (now, job.job_id, owner),
        )
        if changed == 1 and also is not None:
            also(tx)
    return changed == 1


def retry_later(
    store: Store, job: Job, *, owner: str, error: str, now: float, next_attempt_at: float
) -> bool:
    """Release the lease and schedule the next attempt; the first failure's time is kept."""
    with store.transaction() as tx:
        return (
            tx.execute(
                "UPDATE outbox SET lease_owner = NULL, lease_expires_at = NULL, last_error = ?,"
                " next_attempt_at = ?, first_failed_at = COALESCE(first_failed_at, ?)"
                " WHERE job_id = ? AND lease_owner = ? AND state = 'pending'",
                (error[:2000], next_attempt_at, now, job.job_id, owner),
            )
            == 1
        )


def defer(store: Store, job: Job, *, owner: str, until: float) -> bool:
    """Release the lease and run the job again at `until`, as if this claim had not happened:
    not an attempt, not a failure (our own pacing, never the target's answer)."""
    with store.transaction() as tx:
        return (
            tx.execute(
                "UPDATE outbox SET lease_owner = NULL, lease_expires_at = NULL,"
                " next_attempt_at = ?, attempts = attempts - 1"
                " WHERE job_id = ? AND lease_owner = ? AND state = 'pending'",
                (until, job.job_id, owner),
            )
            == 1
        )


def dead_letter(store: Store, job: Job, *, owner: str, error: str, now: float) -> bool:
    """Move a job that exhausted its attempts (or cannot succeed) to `dead_letters`."""
    with store.transaction() as tx:
        if (
            tx.execute(
                "UPDATE outbox SET last_error = ?, lease_owner = NULL, lease_expires_at = NULL"
                " WHERE job_id = ? AND lease_owner = ? AND state = 'pending'",
                (error[:2000], job.job_id, owner),
            )
            != 1
        ):
            return False
        tx.execute(
            f"INSERT INTO dead_letters ({_COLUMNS}, died_at)"
            f" SELECT {_COLUMNS}, ? FROM outbox WHERE job_id = ?",
            (now, job.job_id),
        )
        tx.execute("DELETE FROM outbox WHERE job_id = ?", (job.job_id,))
    return True


def list_dead_letters(store: Store, *, job_ids: Sequence[str] = (), limit: int = 1000) -> list[Row]:
    """The oldest `limit` dead letters, or those of `job_ids` (all of them) when given."""
    where, params = "", tuple[str, ...]()
    if job_ids:
        where = f" WHERE job_id IN ({', '.join('?' * len(job_ids))})"
        params, limit = tuple(job_ids), len(job_ids)
    with store.transaction(write=False) as tx:
        return tx.fetchall(
            f"SELECT {_COLUMNS}, died_at FROM dead_letters{where} ORDER BY died_at LIMIT ?",
            (*params, limit),
        )


def requeue_dead_letters(store: Store, *, now: float, job_ids: Iterable[str] | None = None) -> int:
    """Move dead letters back to the outbox with fresh attempts; return how many moved.

    A dead letter whose dedupe key is queued again meanwhile stays where it is.
    """
    moved = 0
    with store.transaction() as tx:
        rows = tx.fetchall("SELECT job_id FROM dead_letters ORDER BY died_at")
        wanted = None if job_ids is None else set(job_ids)
        for row in rows:
            if wanted is not None and row["job_id"] not in wanted:
                continue
            inserted = tx.execute(
                f"INSERT INTO outbox ({_COLUMNS}) SELECT job_id, kind, dedupe_key, delivery_id,"
                " target, body, 'pending', 0, ?, NULL, NULL, last_error, created_at, NULL, NULL"
                " FROM dead_letters WHERE job_id = ? ON CONFLICT DO NOTHING",
                (now, row["job_id"]),
            )
            if inserted == 1:
                tx.execute("DELETE FROM dead_letters WHERE job_id = ?", (row["job_id"],))
                moved += 1
    return moved


@dataclass(frozen=True)
class QueueStats:
    pending: dict[str, int]
    leased: dict[str, int]
    oldest_pending_at: float | None
    dead_by_kind: dict[str, int]
    done: int

    @property
    def dead_letters(self) -> int:
        return sum(self.dead_by_kind.values())


def queue_stats(store: Store, *, now: float) -> QueueStats:
    with store.transaction(write=False) as tx:
        rows = tx.fetchall(
            "SELECT kind, CASE WHEN lease_owner IS NULL THEN 0 ELSE 1 END AS leased,"
            " COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox WHERE state = 'pending'"
            " GROUP BY kind, CASE WHEN lease_owner IS NULL THEN 0 ELSE 1 END"
        )
        dead = tx.fetchall("SELECT kind, COUNT(*) AS n FROM dead_letters GROUP BY kind")
        done = int(tx.scalar("SELECT COUNT(*) FROM outbox WHERE state = 'done'") or 0)
    pending: dict[str, int] = {}
    leased: dict[str, int] = {}
    oldest = [float(r["oldest"]) for r in rows if r["oldest"] is not None]
    for r in rows:
        bucket = leased if r["leased"] else pending
        bucket[r["kind"]] = bucket.get(r["kind"], 0) + int(r["n"])
    dead_by_kind = {str(r["kind"]): int(r["n"]) for r in dead}
    return QueueStats(pending, leased, min(oldest) if oldest else None, dead_by_kind, done)


def prune(store: Store, *, older_than: float) -> dict[str, int]:
    """Delete finished work and deliveries received before `older_than`."""
    statements = {
        # A delivery whose work is still pending or dead-lettered is kept: its payload is needed.
        "deliveries": "DELETE FROM deliveries WHERE received_at < ? AND NOT EXISTS"
        " (SELECT 1 FROM outbox o WHERE o.delivery_id = deliveries.delivery_id"
        " AND o.state = 'pending') AND NOT EXISTS (SELECT 1 FROM dead_letters d"
        " WHERE d.delivery_id = deliveries.delivery_id)",
        "outbox": "DELETE FROM outbox WHERE state = 'done' AND done_at < ?",
        "dispatches": "DELETE FROM dispatches WHERE dispatched_at < ?",
        "dead_letters": "DELETE FROM dead_letters WHERE died_at < ?",
        # Which run owns a dispatch, and re-runs granted: no longer needed with it.
        "dispatch_claims": "DELETE FROM dispatch_claims WHERE claimed_at < ?",
        "rerun_grants": "DELETE FROM rerun_grants WHERE granted_at < ?",
    }
    with store.transaction() as tx:
        counts = {
            t: tx.execute(sql, (older_than,)) for t, sql in statements.items() if t != "deliveries"
        }
        counts["deliveries"] = tx.execute(statements["deliveries"], (older_than,))
    return counts
