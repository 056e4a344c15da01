"""Nightly and periodic callbacks: one completed report per job, no state machine.

``delivery_id`` is the PyTorch commit SHA; no dispatch record is required
(CRCR's nightly flow). A repeated report replaces the previous one for the same
job key (last write wins); the HUD forward is keyed by the report's digest so an
identical repeat is not forwarded twice.
"""

from __future__ import annotations

from relay.callbacks.body import CallbackBody
from relay.callbacks.records import JobFacts, save_job
from relay.callbacks.state_machine import COMPLETED, JobKey, JobState
from relay.store import Tx


def record_periodic(
    tx: Tx,
    key: JobKey,
    body: CallbackBody,
    selection_id: str | None,
    identity: str,
    now: float,
) -> None:
    state = JobState(
        status=COMPLETED,
        check_run_id=body.workflow.check_run_id,
        conclusion=body.workflow.conclusion,
        dispatched_at=None,
        in_progress_received_at=None,
        completed_received_at=now,
        queue_time=None,
        execution_time=None,
        completed_digest=body.digest(),
    )
    facts = JobFacts(
        pr_number=None,
        head_sha=body.delivery_id,
        selection_id=selection_id,
        callback_token_id=None,
        identity=identity,
    )
    save_job(tx, key, state, body, facts, now)
