"""The relay as a HUD: ``POST /api/crcr/results`` from another relay, into ``hud_rows``.

Authenticated by a shared key (``extra.callbacks.hud_api_keys``) in the
``x-hud-internal-bot`` header (PyTorch's HUD; what CRCR's relay sends since
pytorch/test-infra#8143), or in ``Authorization`` either bare (what CRCR's relay sent
before it, ``utils/hud.py``) or as ``Bearer <key>``; compared in constant time. Rows are upserted under CRCR's key
``verified_repo/delivery_id/workflow/job/check_run_id``; a row never goes back
from completed to in_progress (a late retry of an older forward).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relay.callbacks.answer import Answer
from relay.callbacks.settings import callback_settings
from relay.hud import HUD_KEY_HEADER, hud_key
from relay.json_body import BadBody, parse_json_body, storable_text
from relay.store import Tx

if TYPE_CHECKING:
    from relay.state import RelayState


class BadHudRecord(ValueError):
    pass


# The parts of the row's key (a PRIMARY KEY: bounded, so that even 4-byte characters stay
# within PostgreSQL's index row limit) and their longest accepted text.
_KEY_PARTS = (("name", 200), ("job_name", 300), ("check_run_id", 100), ("status", 20))
_PAYLOAD = "untrusted.callback_payload"


def _text(value: Any, field: str, max_chars: int) -> str:
    if not isinstance(value, str) or not value:
        raise BadHudRecord(f"{field} must be a non-empty string")
    try:
        return storable_text(value, field, max_chars=max_chars)
    except BadBody as error:
        raise BadHudRecord(str(error)) from None


def validate_record(data: Any) -> tuple[str, str, dict[str, Any]]:
    """(verified_repo, delivery_id, callback_payload) or BadHudRecord naming the field."""
    if not isinstance(data, dict):
        raise BadHudRecord("body must be a JSON object")
    trusted, untrusted = data.get("trusted"), data.get("untrusted")
    if not isinstance(trusted, dict) or not isinstance(untrusted, dict):
        raise BadHudRecord("body needs objects 'trusted' and 'untrusted'")
    repo = trusted.get("verified_repo")
    if not isinstance(repo, str) or repo.count("/") != 1:
        raise BadHudRecord("trusted.verified_repo must be owner/repo")
    _text(repo, "trusted.verified_repo", 200)
    payload = untrusted.get("callback_payload")
    if not isinstance(payload, dict):
        raise BadHudRecord(f"{_PAYLOAD} must be an object")
    if not isinstance(payload.get("delivery_id"), str) or not payload["delivery_id"]:
        raise BadHudRecord(f"{_PAYLOAD}.delivery_id is required")
    delivery_id = _text(payload["delivery_id"], f"{_PAYLOAD}.delivery_id", 200)
    workflow = payload.get("workflow")
    if not isinstance(workflow, dict) or not workflow.get("name") or not workflow.get("job_name"):
        raise BadHudRecord(f"{_PAYLOAD}.workflow needs name and job_name")
    for part, max_chars in _KEY_PARTS:
        value = workflow.get(part)
        if isinstance(value, int) and not isinstance(value, bool) and part == "check_run_id":
            value = str(value)  # GitHub's check run ids are numbers
        if value is not None:
            _text(value, f"{_PAYLOAD}.workflow.{part}", max_chars)
    return repo, delivery_id, payload


class HudReceiver:
    def __init__(self, state: RelayState) -> None:
        self.state = state
        settings = callback_settings(state.config.extra)
        self.keys = [k.get_secret_value().encode() for k in settings.hud_api_keys]

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        offered = [headers.get(HUD_KEY_HEADER) or ""]
        authorization = (headers.get("authorization") or "").strip()
        scheme, _, value = authorization.partition(" ")
        offered.append(value.strip() if scheme.lower() == "bearer" else authorization)
        return any(
            hmac.compare_digest(given.encode(), key)
            for given in offered
            if given
            for key in self.keys
        )

    def handle(self, headers: Mapping[str, str], raw: bytes) -> Answer:
        if not self.keys:
            return Answer(404, {"error": "this relay accepts no HUD rows (hud_api_keys unset)"})
        if not self._authorized(headers):
            return Answer(401, {"error": f"missing or wrong {HUD_KEY_HEADER} key"})
        try:
            text, data = parse_json_body(raw)
            repo, delivery_id, payload = validate_record(data)
        except ValueError as error:  # BadBody, BadHudRecord
            return Answer(400, {"error": str(error)})
        key = hud_key(repo, payload)
        with self.state.store.transaction() as tx:
            stored = _upsert(tx, key, repo, delivery_id, text, self.state.clock.now())
        # ok/status/dynamoKey as PyTorch's HUD answers; key/stored are ours.
        status = (payload.get("workflow") or {}).get("status")
        answer = {"ok": True, "status": status, "dynamoKey": key, "key": key, "stored": stored}
        return Answer(200, answer)


def _upsert(tx: Tx, key: str, repo: str, delivery_id: str, body: str, now: float) -> bool:
    existing = tx.fetchone("SELECT body FROM hud_rows WHERE key = ?", (key,))
    going_back = _status(body) == "in_progress"
    if existing is not None and going_back and _status(existing["body"]) == "completed":
        return False
    tx.execute(
        "INSERT INTO hud_rows (key, verified_repo, delivery_id, body, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET body = excluded.body,"
        " updated_at = excluded.updated_at",
        (key, repo, delivery_id, body, now),
    )
    return True


def _status(body: str) -> str:
    workflow = (json.loads(body).get("untrusted") or {}).get("callback_payload", {}).get("workflow")
    return str((workflow or {}).get("status") or "")
