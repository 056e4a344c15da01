"""The callback state machine of one downstream job (pure: no I/O).

Per (delivery, repository, run_id, run_attempt, job_name): none -> in_progress
-> completed, as CRCR ships it, with two improvements:

- A repeated callback identical to one already accepted (same digest) is a
  *repeat*: the caller gets the answer it got the first time and nothing
  happens again. CRCR rejects it, so a client retrying after a lost answer
  saw a failure for a result that had been recorded.
- A callback for a step already taken with different content is a *conflict*
  (409): a replay or a second job claiming the same key.

Invalid transitions (completed before in_progress, in_progress after
completed) are 400, as shipped. The in_progress and completed callbacks must
come from the same check run when both name one (CRCR's HUD key includes it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

IN_PROGRESS = "in_progress"
COMPLETED = "completed"


@dataclass(frozen=True)
class JobKey:
    delivery_id: str
    repo: str
    run_id: int
    run_attempt: int
    job_name: str


@dataclass(frozen=True)
class JobState:
    """What the store holds for one job (the part the transitions look at)."""

    status: str
    check_run_id: str | None
    conclusion: str | None
    dispatched_at: float | None
    in_progress_received_at: float | None
    completed_received_at: float | None
    queue_time: float | None
    execution_time: float | None
    # Digest of the accepted callback of each step, see CallbackBody.digest().
    in_progress_digest: str | None = None
    completed_digest: str | None = None
    swept: bool = False


@dataclass(frozen=True)
class Report:
    """The facts of one callback the transitions need."""

    status: Literal["in_progress", "completed"]
    conclusion: str | None
    check_run_id: str | None
    digest: str


@dataclass(frozen=True)
class Accepted:
    state: JobState


@dataclass(frozen=True)
class Repeat:
    """Identical to an accepted callback: answer as before, change nothing."""

    status: str


@dataclass(frozen=True)
class Rejected:
    http_status: int
    reason: str


Outcome = Accepted | Repeat | Rejected


def advance(current: JobState | None, report: Report, dispatched_at: float, now: float) -> Outcome:
    if current is None:
        return _from_none(report, dispatched_at, now)
    if current.status == IN_PROGRESS:
        return _from_in_progress(current, report, now)
    return _from_completed(current, report)


def _from_none(report: Report, dispatched_at: float, now: float) -> Outcome:
    if report.status == COMPLETED:
        return Rejected(400, "invalid transition: completed before in_progress for this job")
    return Accepted(
        JobState(
            status=IN_PROGRESS,
            check_run_id=report.check_run_id,
            conclusion=None,
            dispatched_at=dispatched_at,
            in_progress_received_at=now,
            completed_received_at=None,
            queue_time=max(0.0, now - dispatched_at),
            execution_time=None,
            in_progress_digest=report.digest,
        )
    )


def _from_in_progress(current: JobState, report: Report, now: float) -> Outcome:
    if report.status == IN_PROGRESS:
        if report.digest == current.in_progress_digest:
            return Repeat(IN_PROGRESS)
        if _other_check_run(current.check_run_id, report.check_run_id):
            return Rejected(409, _another_job(current.check_run_id, report.check_run_id))
        return Rejected(409, "conflict: this job already reported in_progress differently")
    if _other_check_run(current.check_run_id, report.check_run_id):
        return Rejected(
            400,
            f"check_run_id {report.check_run_id} differs from {current.check_run_id} "
            "reported with in_progress: both callbacks must come from the same job",
        )
    started = current.in_progress_received_at or now
    return Accepted(
        replace(
            current,
            status=COMPLETED,
            conclusion=report.conclusion,
            check_run_id=current.check_run_id or report.check_run_id,
            completed_received_at=now,
            execution_time=max(0.0, now - started),
            completed_digest=report.digest,
        )
    )


def _from_completed(current: JobState, report: Report) -> Outcome:
    if report.status == IN_PROGRESS:
        if report.digest == current.in_progress_digest:
            return Repeat(IN_PROGRESS)  # a retried in_progress that arrived late
        return Rejected(400, "invalid transition: in_progress after completed for this job")
    if report.digest == current.completed_digest:
        return Repeat(COMPLETED)
    if current.swept:
        if current.conclusion not in (None, "timed_out"):
            return Rejected(
                409,
                f"conflict: the relay already marked this job {current.conclusion}:"
                " its run ended without reporting completion",
            )
        return Rejected(409, "conflict: this job was already marked timed_out by the sweeper")
    return Rejected(409, "conflict: this job already reported completed differently")


def _another_job(recorded: str | None, reported: str | None) -> str:
    # Jobs are keyed by job_name: matrix legs sharing github.job collide here (CRCR's
    # action documents that each leg must pass its own job-name).
    return (
        f"conflict: check run {reported} reports under the job_name that check run "
        f"{recorded} already uses in this run; give each matrix leg its own job_name "
        "(the callback action's job-name input)"
    )


def _other_check_run(recorded: str | None, reported: str | None) -> bool:
    return recorded is not None and reported is not None and recorded != reported


def time_out(current: JobState, now: float, conclusion: str = "timed_out") -> JobState:
    """The sweeper's transition: a job in progress for too long becomes timed_out (or
    `conclusion`, for a run known to have ended without reporting)."""
    started = current.in_progress_received_at or now
    return replace(
        current,
        status=COMPLETED,
        conclusion=conclusion,
        completed_received_at=now,
        execution_time=max(0.0, now - started),
        swept=True,
    )
