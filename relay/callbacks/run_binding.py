"""Which downstream run a dispatch belongs to: effectively once, end to end.

The outbox dispatches at least once: a worker killed after GitHub accepted a dispatch
sends it again, and GitHub starts a second run of the downstream workflow. Both runs
carry the same callback token (its id is derived from the dispatch). The first run that
uses the token -- its claim (``POST /github/claim``, the workflow's first step) or its
first callback -- binds the token to its ``(run_id, run_attempt)``; every other run that
presents it is told "duplicate" at its claim (and stops without testing) and refused
with 403 at its callbacks. So the dashboard, the HUD and the check runs see one result
per (delivery, repository, job).

A re-run is a new attempt of the bound run. GitHub replays the dispatch's payload, so the
re-run presents the same token: it is let in when the relay itself asked for it (a
"Re-run" on the upstream check run or check suite records a grant, ``grant_rerun``), and
the binding then moves to the new attempt. A re-run started on the downstream's own
Actions page has no grant and is refused like any other run.

``decide`` is pure; the functions below it are the SQL, inside the caller's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from relay.store import Tx

Verdict = Literal["bound", "same", "rerun", "other"]


@dataclass(frozen=True)
class RunRef:
    run_id: int
    run_attempt: int

    def __str__(self) -> str:
        return f"run {self.run_id} attempt {self.run_attempt}"


@dataclass(frozen=True)
class Binding:
    verdict: Verdict  # bound: first run; same: the bound run again; rerun: a granted re-run
    run: RunRef  # the run the dispatch belongs to after the decision

    @property
    def allowed(self) -> bool:
        return self.verdict != "other"


def decide(current: RunRef | None, run: RunRef) -> Binding:
    """The binding for `run` given the dispatch's `current` one (None: not bound yet).
    A later attempt of the bound run comes back as "other"; `bind_run` lets it in when
    the relay granted that re-run."""
    if current is None:
        return Binding("bound", run)
    if current == run:
        return Binding("same", current)
    return Binding("other", current)


def may_be_rerun(current: RunRef, run: RunRef) -> bool:
    return run.run_id == current.run_id and run.run_attempt > current.run_attempt


def bind_run(tx: Tx, delivery_id: str, repo: str, run: RunRef, *, how: str, now: float) -> Binding:
    """Decide and record; `how` is "claim" or "callback" (who bound it, for the record)."""
    for _ in range(2):
        current = _load(tx, delivery_id, repo)
        binding = decide(current, run)
        if binding.verdict == "bound":
            if _insert(tx, delivery_id, repo, run, how, now):
                return binding
            continue  # a concurrent first run bound it meanwhile: decide on its row
        if current is not None and may_be_rerun(current, run) and _take_grant(tx, repo, run):
            _move(tx, delivery_id, repo, run)
            return Binding("rerun", run)
        return binding
    current = _load(tx, delivery_id, repo)
    assert current is not None  # the insert lost to a committed row
    return decide(current, run)


def grant_rerun(tx: Tx, repo: str, run_id: int, now: float) -> None:
    """The relay asked GitHub to re-run `run_id`: its next attempt may take over."""
    tx.execute(
        "INSERT INTO rerun_grants (repo, run_id, granted_at, pending) VALUES (?, ?, ?, 1)"
        " ON CONFLICT (repo, run_id) DO UPDATE SET granted_at = excluded.granted_at,"
        " pending = 1",
        (repo, run_id, now),
    )


def _load(tx: Tx, delivery_id: str, repo: str) -> RunRef | None:
    row = tx.fetchone(
        "SELECT run_id, run_attempt FROM dispatch_claims WHERE delivery_id = ? AND repo = ?",
        (delivery_id, repo),
    )
    return None if row is None else RunRef(int(row["run_id"]), int(row["run_attempt"]))


def _insert(tx: Tx, delivery_id: str, repo: str, run: RunRef, how: str, now: float) -> bool:
    return (
        tx.execute(
            "INSERT INTO dispatch_claims (delivery_id, repo, run_id, run_attempt, claimed_by,"
            " claimed_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (delivery_id, repo) DO NOTHING",
            (delivery_id, repo, run.run_id, run.run_attempt, how, now),
        )
        == 1
    )


def _take_grant(tx: Tx, repo: str, run: RunRef) -> bool:
    return (
        tx.execute(
            "UPDATE rerun_grants SET pending = 0"
            " WHERE LOWER(repo) = LOWER(?) AND run_id = ? AND pending = 1",
            (repo, run.run_id),
        )
        == 1
    )


def _move(tx: Tx, delivery_id: str, repo: str, run: RunRef) -> None:
    tx.execute(
        "UPDATE dispatch_claims SET run_attempt = ? WHERE delivery_id = ? AND repo = ?",
        (run.run_attempt, delivery_id, repo),
    )
