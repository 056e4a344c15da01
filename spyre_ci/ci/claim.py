"""Claim the dispatch for this run: the select job's first step. Pure: no I/O.

The relay dispatches at least once, so GitHub may start this workflow twice for one
upstream event. The first run to claim the dispatch (``POST /github/claim``) owns it;
a later run is told "duplicate" and stops without testing or reporting, so the
dashboard shows one result (docs/callbacks.md, "Effectively once").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spyre_ci.ci.callback import SCHEMA_VERSION, WorkflowRun

CALLBACK_PATH = "/github/callback"
CLAIM_PATH = "/github/claim"


@dataclass(frozen=True)
class ClaimOutcome:
    duplicate: bool  # another run owns the dispatch: stop, test nothing, report nothing
    reason: str

    def outputs(self) -> dict[str, str]:
        return {
            "claimed": "false" if self.duplicate else "true",
            "duplicate": "true" if self.duplicate else "false",
            "claim_reason": self.reason,
        }


def claim_url(callback_url: str) -> str:
    """The claim endpoint next to the relay's callback endpoint."""
    base = callback_url.rstrip("/")
    if base.endswith(CALLBACK_PATH):
        base = base[: -len(CALLBACK_PATH)]
    return base + CLAIM_PATH


def build_claim_body(client_payload: Mapping[str, Any], run: WorkflowRun) -> dict[str, Any]:
    """The dispatched client_payload echoed back (callback token included) plus the run."""
    body = {k: v for k, v in client_payload.items() if k not in ("workflow", "selection")}
    body["workflow"] = {
        "schema_version": SCHEMA_VERSION,
        "name": run.name,
        "run_id": str(run.run_id),
        "run_attempt": str(run.run_attempt),
        "job_name": run.job_name,
    }
    return body


def interpret(status: int, text: str) -> ClaimOutcome:
    """What the relay's answer means for this run. A relay without the endpoint (404, e.g.
    CRCR's own) cannot deduplicate: the run goes on."""
    if status == 404:
        return ClaimOutcome(False, "the relay has no claim endpoint: not deduplicated")
    try:
        answer = json.loads(text)
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    if answer.get("status") == "duplicate":
        reason = str(answer.get("reason") or "another run owns this dispatch")
        return ClaimOutcome(True, f"duplicate: {reason}")
    if answer.get("status") == "ignored":
        return ClaimOutcome(False, f"not deduplicated: {answer.get('reason', 'ignored')}")
    run = answer.get("run_id"), answer.get("run_attempt")
    return ClaimOutcome(False, f"claimed for run {run[0]} attempt {run[1]}")
