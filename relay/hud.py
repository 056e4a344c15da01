"""HUD records as CRCR sends them, and forwarding them through the outbox.

``POST {hud}/api/crcr/results`` with::

    {"trusted": {"ci_metrics": {"queue_time": ..., "execution_time": ...},
                 "verified_repo": "owner/repo", "downstream_repo_level": "L2"},
     "untrusted": {"callback_payload": <the callback body as received>}}

The HUD upserts under ``verified_repo/delivery_id/workflow.name/job_name/check_run_id``.
A forward is an outbox job (kind ``hud``): a HUD that is down delays results,
it does not lose them (retries with backoff, then a dead letter that
``spyre-ci relay dead-letters --requeue`` sends again).
"""

from __future__ import annotations

from typing import Any

import httpx

from relay.jobs import PermanentError, RetryableError
from relay.store import Row

HUD_PATH = "/api/crcr/results"
HUD_KEY_HEADER = "x-hud-internal-bot"


def hud_record(row: Row, level: str | None, callback_payload: dict[str, Any]) -> dict[str, Any]:
    """The body CRCR posts to the HUD for one job's latest state (pure)."""
    return {
        "trusted": {
            "ci_metrics": {
                "queue_time": row.get("queue_time"),
                "execution_time": row.get("execution_time"),
            },
            "verified_repo": row["repo"],
            "downstream_repo_level": level,
        },
        "untrusted": {"callback_payload": callback_payload},
    }


def hud_key(verified_repo: str, callback_payload: dict[str, Any]) -> str:
    """CRCR's upsert key: verified_repo/delivery_id/workflow/job/check_run_id."""
    workflow = callback_payload.get("workflow") or {}
    parts = (
        verified_repo,
        callback_payload.get("delivery_id"),
        workflow.get("name"),
        workflow.get("job_name"),
        workflow.get("check_run_id"),
    )
    return "/".join("" if p is None else str(p) for p in parts)


def results_url(hud_url: str) -> str:
    """``{hud}/api/crcr/results``; a URL that already ends so (CRCR's ``HUD_API_URL``
    is the full endpoint) is used as given."""
    base = hud_url.rstrip("/")
    return base if base.endswith(HUD_PATH) else base + HUD_PATH


def forward(http: httpx.Client, hud_url: str, key: str | None, record: dict[str, Any]) -> None:
    """Send one record; raise RetryableError/PermanentError as the answer says.

    The key goes in ``x-hud-internal-bot``, the header PyTorch's HUD checks
    (torchci ``checkAuthWithApiToken``) and the one CRCR's relay sends since
    pytorch/test-infra#8143 (before it: a bare ``Authorization`` value).
    """
    headers = {HUD_KEY_HEADER: key} if key else {}
    try:
        response = http.post(results_url(hud_url), json=record, headers=headers)
    except httpx.HTTPError as error:
        raise RetryableError(f"HUD unreachable: {type(error).__name__}: {error}") from error
    status = response.status_code
    if 200 <= status < 300:
        return
    if status >= 500 or status in (408, 429):
        raise RetryableError(f"HUD answered {status}: {response.text[:200]}", response.headers)
    raise PermanentError(f"HUD refused the record ({status}): {response.text[:200]}")
