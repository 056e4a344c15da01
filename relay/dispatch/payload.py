"""Build `client_payload` as CRCR ships it, check GitHub's limits, slim if needed. No I/O.

GitHub's `repository_dispatch`: `event_type` <= 100 characters; `client_payload`
<= 10 top-level keys and < 64 KB (serialized). A webhook payload is often larger
(a `pull_request` carries the whole PR with users and repositories); when the
full payload does not fit, it is replaced by the subset downstream workflows
read (SLIM_FIELDS), and `payload_slimmed: true` tells the downstream so.
"""

from __future__ import annotations

import json
from typing import Any

MAX_EVENT_TYPE_CHARS = 100
MAX_CLIENT_PAYLOAD_KEYS = 10
MAX_CLIENT_PAYLOAD_BYTES = 64 * 1024  # must stay strictly below

# The fields of the webhook payload that downstream workflows read (dotted paths).
SLIM_FIELDS: tuple[str, ...] = (
    "action",
    "number",
    "ref",
    "before",
    "after",
    "created",
    "deleted",
    "forced",
    "base_ref",
    "head_commit.id",
    "head_commit.timestamp",
    "pusher.name",
    "repository.full_name",
    "repository.clone_url",
    "repository.html_url",
    "sender.login",
    "label.name",
    "pull_request.number",
    "pull_request.state",
    "pull_request.merged",
    "pull_request.draft",
    "pull_request.html_url",
    "pull_request.title",
    "pull_request.user.login",
    "pull_request.head.sha",
    "pull_request.head.ref",
    "pull_request.head.repo.full_name",
    "pull_request.base.sha",
    "pull_request.base.ref",
    "pull_request.merge_commit_sha",
    "pull_request.labels",
)


class PayloadTooLargeForGitHub(ValueError):
    """Even the slimmed payload breaks a GitHub limit: the job cannot succeed."""


def serialized_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def _pick(payload: dict[str, Any], dotted: str, out: dict[str, Any]) -> None:
    source: Any = payload
    parts = dotted.split(".")
    for part in parts:
        if not isinstance(source, dict) or part not in source:
            return
        source = source[part]
    if dotted == "pull_request.labels" and isinstance(source, list):
        source = [{"name": lab.get("name")} for lab in source if isinstance(lab, dict)]
    node = out
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = source


def slim_payload(payload: dict[str, Any]) -> dict[str, Any]:
    slim: dict[str, Any] = {}
    for dotted in SLIM_FIELDS:
        _pick(payload, dotted, slim)
    return slim


def check_limits(event_type: str, client_payload: dict[str, Any]) -> None:
    if not event_type or len(event_type) > MAX_EVENT_TYPE_CHARS:
        raise PayloadTooLargeForGitHub(f"event_type must be 1..{MAX_EVENT_TYPE_CHARS} characters")
    if len(client_payload) > MAX_CLIENT_PAYLOAD_KEYS:
        raise PayloadTooLargeForGitHub(
            f"client_payload has {len(client_payload)} top-level keys (max {MAX_CLIENT_PAYLOAD_KEYS})"
        )
    size = serialized_size(client_payload)
    if size >= MAX_CLIENT_PAYLOAD_BYTES:
        raise PayloadTooLargeForGitHub(
            f"client_payload is {size} bytes (must be < {MAX_CLIENT_PAYLOAD_BYTES})"
        )


def build_client_payload(
    event_type: str, delivery_id: str, payload: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """`{event_type, delivery_id, payload, **extra}`, slimmed if needed to fit GitHub's limits.

    `extra` carries keys added by other parts of the relay (e.g. the callback token).
    Raises `PayloadTooLargeForGitHub` if even the slim form does not fit.
    """
    client_payload = {
        "event_type": event_type,
        "delivery_id": delivery_id,
        "payload": payload,
        **extra,
    }
    try:
        check_limits(event_type, client_payload)
        return client_payload
    except PayloadTooLargeForGitHub:
        pass
    slim = {**client_payload, "payload": slim_payload(payload), "payload_slimmed": True}
    check_limits(event_type, slim)
    return slim
