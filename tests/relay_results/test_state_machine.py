"""The per-job callback state machine: transitions, repeats, conflicts, CRCR's times."""

from __future__ import annotations

from typing import Literal

from relay.callbacks.state_machine import (
    Accepted,
    JobState,
    Rejected,
    Repeat,
    Report,
    advance,
    time_out,
)

DISPATCHED = 1000.0


def _report(
    status: Literal["in_progress", "completed"],
    digest: str,
    check_run_id: str | None = "7",
    conclusion: str | None = None,
) -> Report:
    return Report(status, conclusion, check_run_id, digest)


def _started(at: float = 1100.0) -> JobState:
    outcome = advance(None, _report("in_progress", "p1"), DISPATCHED, at)
    assert isinstance(outcome, Accepted)
    return outcome.state


def test_in_progress_records_queue_time_since_dispatch() -> None:
    state = _started(1100.0)
    assert (state.status, state.queue_time, state.execution_time) == ("in_progress", 100.0, None)


def test_completed_records_execution_time_since_in_progress() -> None:
    outcome = advance(_started(1100.0), _report("completed", "c1", conclusion="success"), 0, 1400)
    assert isinstance(outcome, Accepted)
    state = outcome.state
    assert (state.status, state.conclusion, state.queue_time, state.execution_time) == (
        "completed",
        "success",
        100.0,
        300.0,
    )


def test_completed_before_in_progress_is_an_invalid_transition() -> None:
    outcome = advance(None, _report("completed", "c1", conclusion="success"), DISPATCHED, 1100)
    assert isinstance(outcome, Rejected) and outcome.http_status == 400


def test_identical_repeats_are_acknowledged_without_effect() -> None:
    started = _started()
    assert advance(started, _report("in_progress", "p1"), DISPATCHED, 1200) == Repeat("in_progress")
    done = advance(started, _report("completed", "c1", conclusion="success"), 0, 1300)
    assert isinstance(done, Accepted)
    assert advance(done.state, _report("completed", "c1"), 0, 1500) == Repeat("completed")
    # A retried in_progress arriving after completion is still the same callback.
    assert advance(done.state, _report("in_progress", "p1"), 0, 1500) == Repeat("in_progress")


def test_conflicting_repeats_are_rejected() -> None:
    started = _started()
    again = advance(started, _report("in_progress", "p2"), DISPATCHED, 1200)
    assert isinstance(again, Rejected) and again.http_status == 409
    done = advance(started, _report("completed", "c1", conclusion="success"), 0, 1300)
    assert isinstance(done, Accepted)
    other = advance(done.state, _report("completed", "c2", conclusion="failure"), 0, 1400)
    assert isinstance(other, Rejected) and other.http_status == 409
    back = advance(done.state, _report("in_progress", "p3"), 0, 1400)
    assert isinstance(back, Rejected) and back.http_status == 400


def test_completion_from_another_check_run_is_rejected() -> None:
    outcome = advance(
        _started(), _report("completed", "c1", check_run_id="8", conclusion="success"), 0, 1
    )
    assert isinstance(outcome, Rejected) and "same job" in outcome.reason


def test_a_matrix_leg_sharing_the_job_name_is_told_to_name_itself() -> None:
    # Two legs of one matrix, both job_name "build" (github.job), distinct check runs.
    outcome = advance(_started(), _report("in_progress", "p2", check_run_id="8"), 0, 1)
    assert isinstance(outcome, Rejected) and outcome.http_status == 409
    assert "check run 8" in outcome.reason and "job-name" in outcome.reason


def test_sweeper_times_out_and_a_late_completion_conflicts() -> None:
    swept = time_out(_started(1100.0), 1100.0 + 6 * 3600)
    assert (swept.status, swept.conclusion, swept.execution_time) == (
        "completed",
        "timed_out",
        6 * 3600,
    )
    late = advance(swept, _report("completed", "c9", conclusion="success"), 0, 1e9)
    assert isinstance(late, Rejected) and "sweeper" in late.reason
