"""Retention of per-test results: a periodic task of the worker (``PERIODIC_TASKS``).

Failed-test rows (``test_failures``, with their messages) older than
``extra.results.retention_days`` (30 by default) are deleted, and so are the histories
(``test_status``) of tests no run of that backend has reported within that time (a
test that left the selection, a backend that left the allowlist). A test still
running keeps its history: its row is rewritten on every run. The job rows themselves
(with their steps and log tail) are kept as they always were.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from relay.results.settings import results_settings
from relay.store import Store

if TYPE_CHECKING:
    from relay.state import RelayState

log = logging.getLogger("relay.results")
DAY = 86_400.0


def prune_test_results(store: Store, *, older_than: float) -> dict[str, int]:
    """Delete failed-test rows received, and histories last updated, before `older_than`."""
    with store.transaction() as tx:
        return {
            "test_failures": tx.execute(
                "DELETE FROM test_failures WHERE received_at < ?", (older_than,)
            ),
            "test_status": tx.execute(
                "DELETE FROM test_status WHERE updated_at < ?", (older_than,)
            ),
        }


def prune_task(state: RelayState) -> None:
    days = results_settings(state.config.extra).retention_days
    counts = prune_test_results(state.store, older_than=state.clock.now() - days * DAY)
    if any(counts.values()):
        log.info("pruned test results older than %.1f days: %s", days, counts)
