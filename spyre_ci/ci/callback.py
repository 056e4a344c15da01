"""The CRCR callback body and the run's conclusion. Pure: no I/O.

The body is the relay's `client_payload` echoed back unchanged (so our signed
callback token, whatever its key, goes back too) plus a `workflow` object with
schema version "1", as pytorch/test-infra's callback action sends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SCHEMA_VERSION = "1"
STATUSES = ("in_progress", "completed")
SELF_REPORTED_EVENTS = ("nightly", "periodic")


class BadCallback(ValueError):
    """A callback that cannot be built as asked; the message says which input is wrong."""


@dataclass(frozen=True)
class WorkflowRun:
    """Where the callback comes from (GitHub's run, or the local target's)."""

    name: str
    url: str
    run_id: str
    run_attempt: str
    job_name: str
    check_run_id: str = ""

    def effective_check_run_id(self) -> str:
        """`job.check_run_id`, else "<run_id>-<run_attempt>" (same for both callbacks).

        Exactly the shipped action's fallback (test-infra
        `.github/actions/cross-repo-ci-relay-callback/report_callback.py`), so the
        HUD key of a job is the same whichever of the two reported it.
        """
        return self.check_run_id or f"{self.run_id}-{self.run_attempt}"


def iso_utc(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def conclusion_for(*, planned_run: bool, job_results: Mapping[str, str], tests_failed: int) -> str:
    """The run's conclusion from the plan, the results of the jobs before it, the tests.

    `job_results` maps job id to GitHub's `needs.<job>.result` (success, failure,
    cancelled, skipped). A job that was skipped because nothing was selected is not
    a failure; one that failed or was cancelled decides the conclusion.
    """
    if not planned_run:
        return "skipped"
    results = set(job_results.values())
    if "cancelled" in results:
        return "cancelled"
    if "failure" in results or tests_failed > 0:
        return "failure"
    return "success"


def self_reported_payload(event_type: str, upstream_sha: str, upstream_repo: str) -> dict[str, Any]:
    """The `client_payload` a nightly/periodic run reports without a dispatch (CRCR)."""
    if event_type not in SELF_REPORTED_EVENTS:
        raise BadCallback(f"event type {event_type!r} is not one of {SELF_REPORTED_EVENTS}")
    if not upstream_sha:
        raise BadCallback("a nightly/periodic callback needs the tested upstream SHA")
    return {
        "event_type": event_type,
        "delivery_id": upstream_sha,
        "payload": {"repository": {"full_name": upstream_repo}, "head_sha": upstream_sha},
    }


def build_callback_body(
    client_payload: Mapping[str, Any],
    run: WorkflowRun,
    *,
    status: str,
    started_at: datetime,
    completed_at: datetime | None = None,
    conclusion: str | None = None,
    test_results: Mapping[str, int] | None = None,
    artifact_url: str = "",
    extra: Mapping[str, Any] | None = None,
    selection: Mapping[str, Any] | None = None,
    run_report: Mapping[str, Any] | None = None,
    progress: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body POSTed to `/github/callback`.

    `run_report` (steps, per-test results, log tail) and `progress` (steps done of
    total, in_progress only) are spyre-ci's additions; a CRCR relay ignores them.
    """
    if status not in STATUSES:
        raise BadCallback(f"status {status!r} is not one of {', '.join(STATUSES)}")
    if status == "completed" and (not conclusion or completed_at is None):
        raise BadCallback("a completed callback needs a conclusion and completed_at")
    if client_payload.get("event_type") in SELF_REPORTED_EVENTS and status != "completed":
        raise BadCallback("nightly/periodic runs report one completed callback only")
    workflow: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "status": status,
        "conclusion": conclusion if status == "completed" else None,
        "name": run.name,
        "url": run.url,
        "run_id": str(run.run_id),
        "run_attempt": str(run.run_attempt),
        "job_name": run.job_name,
        "check_run_id": run.effective_check_run_id(),
        "started_at": iso_utc(started_at),
        "completed_at": iso_utc(completed_at) if completed_at and status == "completed" else None,
    }
    if test_results is not None:
        workflow["test_results"] = dict(test_results)
    if artifact_url:
        workflow["artifact_url"] = artifact_url
    if extra:
        workflow.update(extra)
    ours = ("workflow", "selection", "run_report", "progress")
    body = {k: v for k, v in client_payload.items() if k not in ours}
    body["workflow"] = workflow
    if selection:
        body["selection"] = dict(selection)
    if run_report and status == "completed":
        body["run_report"] = dict(run_report)
    if progress and status == "in_progress":
        body["progress"] = dict(progress)
    return body


def parse_progress(text: str, step: str = "") -> dict[str, Any]:
    """`DONE/TOTAL` (`ci callback --progress`) -> `{done, total[, step]}`; BadCallback if not."""
    done, sep, total = text.partition("/")
    if not (sep and done.strip().isdigit() and total.strip().isdigit()):
        raise BadCallback(f"--progress {text!r}: expected DONE/TOTAL, e.g. 3/8")
    numbers = int(done), int(total)
    if not 0 <= numbers[0] <= numbers[1] or numbers[1] == 0:
        raise BadCallback(f"--progress {text!r}: DONE must be between 0 and TOTAL (> 0)")
    progress: dict[str, Any] = {"done": numbers[0], "total": numbers[1]}
    if step:
        progress["step"] = step[:200]
    return progress
