"""Wait on the relay's own records rather than on what a fake saw.

The fake GitHub records a dispatch before the relay does: the worker commits its
`dispatches` row (and completes the outbox job) only after GitHub's 204. Until then the
relay answers a callback for that dispatch 503 "is being recorded". A test that sends
callbacks right after a dispatch waits here first, so it can still expect a 200 however
slow the worker is. Deadlines are generous (a loaded 2-core CI machine); the waits end as
soon as the record is there.

    wait_for_recorded_dispatches(store_url, {(delivery_id, repo)})   # the store, read-only
    wait_for_dashboard_dispatches(relay_url, {(delivery_id, repo)})  # the relay's JSON API
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote

import httpx

from relay.store import Store, open_store
from tests.support.waiting import wait_until

RECORD_TIMEOUT = 120.0

Pair = tuple[str, str]  # (delivery_id, repository)


def recorded_dispatches(store: Store) -> set[Pair]:
    """(delivery_id, repository) of every dispatch the relay recorded as sent."""
    with store.transaction(write=False) as tx:
        rows = tx.fetchall("SELECT delivery_id, repo FROM dispatches")
    return {(str(r["delivery_id"]), str(r["repo"]).lower()) for r in rows}


def wait_for_recorded_dispatches(
    store_url: str, pairs: Iterable[Pair], *, timeout: float = RECORD_TIMEOUT
) -> None:
    """Wait until the relay's store has a `dispatches` row for each (delivery_id, repo)."""
    wanted = {(d, r.lower()) for d, r in pairs}
    store = open_store(store_url)  # once: each poll is one read transaction
    try:
        wait_until(
            lambda: wanted <= recorded_dispatches(store),
            timeout,
            f"the relay to record the dispatches {sorted(wanted)}",
        )
    finally:
        store.close()


def dashboard_dispatches(relay_url: str, delivery_id: str) -> set[str]:
    """Repositories the relay's delivery page (`/api/crcr/deliveries/{id}`) shows as
    dispatched: read from the relay's `dispatches` rows."""
    answer = httpx.get(f"{relay_url}/api/crcr/deliveries/{quote(delivery_id, safe='')}", timeout=10)
    if answer.status_code != 200:
        return set()
    return {
        str(b["repo"]).lower() for b in answer.json().get("backends", []) if b.get("dispatched_at")
    }


def wait_for_dashboard_dispatches(
    relay_url: str, pairs: Iterable[Pair], *, timeout: float = RECORD_TIMEOUT
) -> None:
    """Wait until the relay shows each (delivery_id, repo) as dispatched."""
    wanted: dict[str, set[str]] = {}
    for delivery_id, repo in pairs:
        wanted.setdefault(delivery_id, set()).add(repo.lower())
    wait_until(
        lambda: all(
            repos <= dashboard_dispatches(relay_url, delivery_id)
            for delivery_id, repos in wanted.items()
        ),
        timeout,
        f"the relay to record the dispatches {wanted}",
    )
