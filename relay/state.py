"""Everything a relay process shares: configuration, store, allowlist, metrics, clock.

Routers, job handlers and dispatchers receive the `RelayState`; it builds the
GitHub client and the dispatchers lazily (a web-only process never needs them).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from relay.allowlist import Allowlist
from relay.allowlist_source import AllowlistSource, StaticAllowlist
from relay.clock import SYSTEM_CLOCK, Clock
from relay.config import RelayConfig
from relay.metrics import Metrics
from relay.outage import OutageLog
from relay.outbox import queue_stats
from relay.store import Store, open_store

if TYPE_CHECKING:
    from relay.dispatch.dispatcher import Dispatcher
    from relay.github.client import GitHubClient


class AllowlistProvider(Protocol):
    def current(self) -> Allowlist: ...


@dataclass
class RelayState:
    config: RelayConfig
    store: Store
    allowlist: AllowlistProvider
    clock: Clock = SYSTEM_CLOCK
    metrics: Metrics = field(default_factory=Metrics)
    # Store failures of this process, logged once per outage (then periodically).
    store_outage: OutageLog = field(
        default_factory=lambda: OutageLog(logging.getLogger("relay.store"), "relay store")
    )
    _github: GitHubClient | None = None
    _dispatchers: dict[str, Dispatcher] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def github(self) -> GitHubClient:
        with self._lock:
            if self._github is None:
                from relay.github.client import GitHubClient

                # what a job's lease leaves for pacing once its token request and its
                # write have each had their timeout
                lease = self.config.worker.lease_seconds
                spare = lease - 2 * self.config.github.timeout_seconds
                self._github = GitHubClient(
                    self.config.github, self.clock, max_write_wait=max(0.0, spare)
                )
            return self._github

    def dispatcher(self, connection: str) -> Dispatcher:
        from relay.dispatch.dispatcher import load_dispatcher

        if connection not in self._dispatchers:
            made = load_dispatcher(connection, self)
            with self._lock:
                self._dispatchers.setdefault(connection, made)
        return self._dispatchers[connection]

    def close(self) -> None:
        if self._github is not None:
            self._github.close()
        self.store.close()


def _queue_depths(store: Store, clock: Clock) -> dict[str, dict[str, int]]:
    """Pending, leased and dead-lettered jobs by kind, from the store (so every process
    reports the same figures). Dead is 0 for every kind seen when none died."""
    stats = queue_stats(store, now=clock.now())
    dead = dict(stats.dead_by_kind)
    for kind in {"dispatch", *stats.pending, *stats.leased}:
        dead.setdefault(kind, 0)
    return {"pending": stats.pending, "leased": stats.leased, "dead": dead}


def build_state(
    config: RelayConfig,
    *,
    store: Store | None = None,
    allowlist: AllowlistProvider | None = None,
    clock: Clock = SYSTEM_CLOCK,
    migrate: bool = True,
) -> RelayState:
    """Open the store (and migrate it), set up the allowlist source and metrics."""
    if store is None:
        store = open_store(
            config.store_url,
            busy_timeout=config.store_timeout_seconds,
            sqlite_synchronous=config.sqlite_synchronous,
        )
    if migrate:
        store.migrate()
    if allowlist is None:
        if config.allowlist is not None:
            allowlist = AllowlistSource(
                config.allowlist.source,
                min_refresh_seconds=config.allowlist.min_refresh_seconds,
                clock=clock,
            )
        else:
            allowlist = StaticAllowlist(Allowlist())
    state = RelayState(config=config, store=store, allowlist=allowlist, clock=clock)
    state.metrics.watch_queue(lambda: _queue_depths(store, clock))
    return state
