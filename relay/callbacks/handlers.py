"""Outbox handlers of part 2: hud, check_run, commit_status, rerun, redeliver.

Listed in ``relay.worker.HANDLER_FACTORIES`` as ``relay.callbacks.handlers:handlers``.
Each reads what it needs when it runs, sends one request, and raises
``RetryableError`` / ``PermanentError`` for the worker to retry or dead-letter.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from relay.callbacks.effects import CHECK_RUN, COMMIT_STATUS, HUD
from relay.callbacks.records import key_from_list, key_text, load_job_row
from relay.callbacks.settings import CallbackSettings, callback_settings
from relay.checks import check_run_request, commit_status_request, details_url
from relay.hud import forward, hud_record
from relay.jobs import PermanentError
from relay.outbox import Job
from relay.store import Row, Tx

if TYPE_CHECKING:
    from relay.state import RelayState

RERUN = "rerun"  # enqueued by relay.callbacks.reruns
REDELIVER = "redeliver"
Handler = Callable[[Job], Callable[[Tx], None] | None]


def callback_payload_of(row: Row) -> dict[str, Any]:
    """The callback body to report for the row; the relay's verdict (the sweeper's
    timed_out, or failure for a local run that ended unreported) replaces the last one."""
    payload: dict[str, Any] = json.loads(row["last_payload"]) if row.get("last_payload") else {}
    if row.get("swept_at") is not None:
        workflow = dict(payload.get("workflow") or {})
        workflow.update(status="completed", conclusion=row.get("conclusion") or "timed_out")
        payload["workflow"] = workflow
    return payload


class _JobReporter:
    def __init__(self, state: RelayState, settings: CallbackSettings) -> None:
        self.state = state
        self.settings = settings

    def _row(self, job: Job) -> Row:
        key = key_from_list(job.body["job"])
        with self.state.store.transaction(write=False) as tx:
            row = load_job_row(tx, key)
        if row is None:
            raise PermanentError(f"job {key_text(key)} is no longer recorded")
        return row


HUD_CONVERGE_ROUNDS = 3


class HudForwarder(_JobReporter):
    def __init__(self, state: RelayState, settings: CallbackSettings) -> None:
        super().__init__(state, settings)
        self.http = httpx.Client(timeout=10.0)
        # Handlers have no shutdown hook: close the connections with the handler.
        weakref.finalize(self, self.http.close)

    def __call__(self, job: Job) -> None:
        key = self.settings.hud_key.get_secret_value() if self.settings.hud_key else None
        sent: dict[str, object] | None = None
        # The HUD keeps the last write of a row. Two workers may forward one row's states
        # (in_progress, completed) at once, and the older read can arrive last: after each
        # write the row is read again, and written again until what was sent is current.
        for _ in range(HUD_CONVERGE_ROUNDS):
            row = self._row(job)
            record = hud_record(row, job.body.get("level"), callback_payload_of(row))
            if record == sent:
                return None
            forward(self.http, job.target, key, record)
            sent = record
        return None


class CheckRunCreator(_JobReporter):
    def __call__(self, job: Job) -> None:
        row = self._row(job)
        if _superseded(job, row) or not row.get("head_sha"):
            return None  # a newer state's check run is (or will be) created instead
        request = check_run_request(
            row, row["head_sha"], details_url(self.state.config.public_url, row)
        )
        self.state.github().request(
            "POST", f"/repos/{job.target}/check-runs", repo=job.target, json=request
        )
        return None


class CommitStatusSetter(_JobReporter):
    def __call__(self, job: Job) -> None:
        row = self._row(job)
        if _superseded(job, row) or not row.get("head_sha"):
            return None
        request = commit_status_request(row, details_url(self.state.config.public_url, row))
        self.state.github().request(
            "POST", f"/repos/{job.target}/statuses/{row['head_sha']}", repo=job.target, json=request
        )
        return None


def _superseded(job: Job, row: Row) -> bool:
    """An in_progress report whose job has completed meanwhile must not be sent last."""
    return job.body.get("step") == "in_progress" and row["status"] != "in_progress"


class Rerunner:
    """``POST /repos/{repo}/actions/runs/{run_id}/rerun`` or ``.../rerun-failed-jobs``."""

    def __init__(self, state: RelayState) -> None:
        self.state = state

    def __call__(self, job: Job) -> None:
        run_id = int(job.body["run_id"])
        suffix = "rerun-failed-jobs" if job.body.get("failed_only") else "rerun"
        path = f"/repos/{job.target}/actions/runs/{run_id}/{suffix}"
        self.state.github().request("POST", path, repo=job.target, json={})
        return None


def handlers(state: RelayState) -> dict[str, Handler]:
    from relay.sweepers import Redeliverer

    settings = callback_settings(state.config.extra)
    return {
        HUD: HudForwarder(state, settings),
        CHECK_RUN: CheckRunCreator(state, settings),
        COMMIT_STATUS: CommitStatusSetter(state, settings),
        RERUN: Rerunner(state),
        REDELIVER: Redeliverer(state),
    }
