"""Store a verified delivery and enqueue its work in one transaction (the shell around routing).

`INGEST_HOOKS` lets other modules enqueue work for routes they own (the L3
label handler and re-runs of part 2): each entry names a function
`(state, tx, delivery, route) -> int` (jobs enqueued), called inside the
ingest transaction for a delivery seen for the first time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from relay.allowlist import Allowlist
from relay.dispatch.targets import targets_for
from relay.json_body import BadBody, parse_json_body
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


def _enqueue_dispatches(
    state: RelayState, tx: Tx, delivery: StoredDelivery, allowlist: Allowlist
) -> int:
    count = 0
    for target in targets_for(delivery.event, allowlist, state.config.targets):
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


def _writer(
    state: RelayState, delivery: StoredDelivery, route: Route, allowlist: Allowlist | None
) -> Callable[[Tx], IngestResult]:
    def write(tx: Tx) -> IngestResult:
        if not _insert_delivery(tx, delivery, route):
            return IngestResult(duplicate=True, enqueued=0)
        enqueued = 0
        if allowlist is not None:
            enqueued = _enqueue_dispatches(state, tx, delivery, allowlist)
        enqueued += _run_hooks(state, tx, delivery, route)
        return IngestResult(duplicate=False, enqueued=enqueued)

    return write


def ingest(state: RelayState, delivery: StoredDelivery, route: Route) -> IngestResult:
    """Store the delivery; if new, enqueue its jobs in the same transaction."""
    # Read the allowlist first: if it cannot be loaded, fail (503) before writing.
    allowlist = state.allowlist.current() if route.kind == "dispatch" else None
    return state.store.run_write(_writer(state, delivery, route, allowlist))


async def ingest_async(state: RelayState, delivery: StoredDelivery, route: Route) -> IngestResult:
    """`ingest` for the event loop: the allowlist is read in a thread only when it
    may need a refresh (file or URL I/O), the write is awaited without a thread."""
    allowlist = None
    if route.kind == "dispatch":
        refresh_due = getattr(state.allowlist, "refresh_due", None)
        if refresh_due is not None and refresh_due():
            allowlist = await run_in_threadpool(state.allowlist.current)
        else:
            allowlist = state.allowlist.current()
    return await state.store.run_write_async(_writer(state, delivery, route, allowlist))


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The webhook's JSON object; `BadBody` (400) naming what is wrong otherwise
    (not UTF-8, not JSON, too deep, a lone surrogate, not an object)."""
    _, data = parse_json_body(body)
    if not isinstance(data, dict):
        raise BadBody("the webhook body must be a JSON object")
    return data
