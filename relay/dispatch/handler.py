"""The worker's handler for `dispatch` jobs: load the delivery, send, record DISPATCHED."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relay.dispatch.dispatcher import DispatchRequest
from relay.dispatch.extensions import apply_extensions
from relay.jobs import PermanentError
from relay.outbox import Job
from relay.store import Tx

if TYPE_CHECKING:
    from relay.state import RelayState

log = logging.getLogger(__name__)


def record_dispatched(
    tx: Tx, request: DispatchRequest, delivery: dict[str, Any], token_id: str | None, now: float
) -> None:
    labels = [
        lab.get("name")
        for lab in (delivery["payload"].get("pull_request") or {}).get("labels") or []
    ]
    tx.execute(
        "INSERT INTO dispatches (delivery_id, repo, level, event_type, pr_number, head_sha, labels,"
        " dispatched_at, callback_token_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (delivery_id, repo) DO UPDATE SET dispatched_at = excluded.dispatched_at,"
        " callback_token_id = excluded.callback_token_id, level = excluded.level",
        (
            request.delivery_id,
            request.target,
            request.level,
            request.event_type,
            delivery["pr_number"],
            delivery["head_sha"],
            json.dumps(labels),
            now,
            token_id,
        ),
    )


class DispatchHandler:
    def __init__(self, state: RelayState) -> None:
        self.state = state

    def _delivery(self, delivery_id: str) -> dict[str, Any]:
        with self.state.store.transaction(write=False) as tx:
            row = tx.fetchone(
                "SELECT event, pr_number, head_sha, payload FROM deliveries WHERE delivery_id = ?",
                (delivery_id,),
            )
        if row is None:
            raise PermanentError(f"delivery {delivery_id} is no longer stored")
        return {**row, "payload": json.loads(row["payload"])}

    def __call__(self, job: Job) -> Callable[[Tx], None]:
        if job.delivery_id is None:
            raise PermanentError("dispatch job without delivery_id")
        delivery = self._delivery(job.delivery_id)
        request = DispatchRequest(
            delivery_id=job.delivery_id,
            target=job.target,
            event_type=job.body.get("event_type", delivery["event"]),
            payload=delivery["payload"],
            level=job.body.get("level"),
            options=job.body.get("options", {}),
        )
        extension = apply_extensions(self.state, request)
        request = dataclasses.replace(request, extra=extension.extra)
        self.state.dispatcher(job.body.get("connection", "github")).dispatch(request)
        sent_at = self.state.clock.now()
        return lambda tx: record_dispatched(
            tx, request, delivery, extension.callback_token_id, sent_at
        )


def handlers(state: RelayState) -> dict[str, Callable[[Job], Callable[[Tx], None] | None]]:
    return {"dispatch": DispatchHandler(state)}
