"""What a job's state change sets off: outbox jobs for the HUD, a check run, a commit status.

Enqueued inside the transaction that records the state, so a crash after the
answer loses nothing. Each job names the job key and the step; its handler
reads the job's row when it runs (see ``relay.callbacks.handlers``), so a
delayed forward never overwrites a newer state with an older one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relay.callbacks.records import key_text, key_to_list, load_job_row
from relay.callbacks.settings import CallbackSettings
from relay.callbacks.state_machine import JobKey
from relay.checks import wants_report
from relay.outbox import enqueue
from relay.store import Row, Tx

if TYPE_CHECKING:
    from relay.state import RelayState

HUD = "hud"
CHECK_RUN = "check_run"
COMMIT_STATUS = "commit_status"


def enqueue_effects(
    tx: Tx,
    state: RelayState,
    settings: CallbackSettings,
    key: JobKey,
    level: str,
    device: str | None,
    labels: tuple[str, ...],
    now: float,
    step: str | None = None,
) -> int:
    """Enqueue the forwards of this job's new state; return how many jobs were added."""
    step = step or _current_step(tx, key)
    body: dict[str, Any] = {"job": key_to_list(key), "step": step, "level": level}
    added = 0
    if settings.hud_url:
        added += _add(tx, HUD, settings.hud_url, body, key, step, now)
    if wants_report(level, device, labels):
        added += enqueue_status_reports(tx, state, settings, key, body, now)
    return added


def enqueue_status_reports(
    tx: Tx,
    state: RelayState,
    settings: CallbackSettings,
    key: JobKey,
    body: dict[str, Any],
    now: float,
) -> int:
    """Check run and/or commit status on the upstream commit, as configured."""
    mode = settings.status_reporting
    added = 0
    upstream = state.config.upstream_repo
    if mode in ("check_runs", "both"):
        added += _add(tx, CHECK_RUN, upstream, body, key, body["step"], now)
    if mode in ("commit_statuses", "both"):
        added += _add(tx, COMMIT_STATUS, upstream, body, key, body["step"], now)
    return added


def _add(
    tx: Tx, kind: str, target: str, body: dict[str, Any], key: JobKey, step: str, now: float
) -> int:
    added = enqueue(
        tx,
        kind=kind,
        target=target,
        body=body,
        dedupe_key=f"{kind}:{key_text(key)}:{step}",
        delivery_id=key.delivery_id,
        now=now,
    )
    return int(added)


def _current_step(tx: Tx, key: JobKey) -> str:
    row = load_job_row(tx, key)
    if row is None:
        raise LookupError(f"job {key_text(key)} is not recorded")
    return step_of(row)


def step_of(row: Row) -> str:
    """The name of the job's current step: one report per step (dedupe key)."""
    if row.get("swept_at") is not None:
        conclusion = row.get("conclusion") or "timed_out"
        return "timed_out" if conclusion == "timed_out" else f"swept:{conclusion}"
    if row["status"] == "completed":
        # A periodic job may be reported again: each distinct report is its own step.
        digest = row.get("completed_digest") or ""
        return f"completed:{digest[:16]}"
    return "in_progress"
