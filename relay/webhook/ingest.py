"""Store a verified delivery and enqueue its work in one transaction (the shell around routing).

`INGEST_HOOKS` lets other modules enqueue work for routes they own (the L3
label handler and re-runs of part 2): each entry names a function
`(state, tx, delivery, route) -> int` (jobs enqueued), called inside the
ingest transaction for a delivery seen for the first time.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay.dispatch.targets import targets_for
from relay.outbox import enqueue
from relay.store import Tx
from relay.webhook.routing import Route

if TYPE_CHECKING:
    from relay.state import RelayState

INGEST_HOOKS: list[str] = [
    "relay.callbacks.labels:on_ingest",  # issue 7: L3 label backfill
    "relay.callbacks.reruns:on_ingest",  # issue 7: check_run/check_suite rerequested
]


@dataclass(frozen=True)
class StoredDelivery:
    delivery_id: str
    event: str
    payload: dict[str, Any]
    raw: bytes
    received_at: float


@dataclass(frozen=True)
class IngestResult:
    duplicate: bool
    enqueued: int


def _insert_delivery(tx: Tx, delivery: StoredDelivery, route: Route) -> bool:
    return (
        tx.execute(
            "INSERT INTO deliveries (delivery_id, event, action, repo, route, pr_number, head_sha,"
            " payload, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (delivery_id) DO NOTHING",
            (
                delivery.delivery_id,
                delivery.event,
                route.action,
                route.repo,
                route.kind,
                route.pr_number,
                route.head_sha,
                delivery.raw.decode("utf-8"),
                delivery.received_at,
            ),
        )
        == 1
    )


def _enqueue_dispatches(state: RelayState, tx: Tx, delivery: StoredDelivery) -> int:
    count = 0
    for target in targets_for(delivery.event, state.allowlist.current(), state.config.targets):
        body: dict[str, Any] = {
            "connection": target.connection,
            "event_type": delivery.event,
            "level": target.level,
        }
        if target.options:
            body["options"] = target.options
        count += enqueue(
            tx,
            kind="dispatch",
            target=target.name,
            body=body,
            dedupe_key=f"dispatch:{delivery.delivery_id}:{target.connection}:{target.name}",
            delivery_id=delivery.delivery_id,
            now=delivery.received_at,
        )
    return count


def _run_hooks(state: RelayState, tx: Tx, delivery: StoredDelivery, route: Route) -> int:
    count = 0
    for dotted in INGEST_HOOKS:
        module_name, _, attr = dotted.partition(":")
        count += int(
            getattr(importlib.import_module(module_name), attr)(state, tx, delivery, route)
        )
    return count


def ingest(state: RelayState, delivery: StoredDelivery, route: Route) -> IngestResult:
    """Store the delivery; if new, enqueue its jobs in the same transaction."""
    if route.kind == "dispatch":
        state.allowlist.current()  # fail (503) before writing if no allowlist can be loaded
    with state.store.transaction() as tx:
        if not _insert_delivery(tx, delivery, route):
            return IngestResult(duplicate=True, enqueued=0)
        enqueued = _enqueue_dispatches(state, tx, delivery) if route.kind == "dispatch" else 0
        enqueued += _run_hooks(state, tx, delivery, route)
    return IngestResult(duplicate=False, enqueued=enqueued)


def parse_json_object(body: bytes) -> dict[str, Any]:
    data = json.loads(body)
    if not isinstance(data, dict):
        raise ValueError("the webhook body must be a JSON object")
    return data
