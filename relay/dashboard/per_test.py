"""The page of one test: its recent outcomes on every backend, suspect range, flakiness,
and its latest failure messages (`/crcr/test?id=<pytest node id>[&repo=owner/name]`)."""

from __future__ import annotations

from typing import Any

from relay.dashboard import results_queries
from relay.dashboard.failures import entries_of, history_view, message_of, run_url, verdict
from relay.results.records import node_key
from relay.store.base import Tx

RECENT_FAILURES = 10


def one_test_page(tx: Tx, now: float, node_id: str, repo: str | None) -> dict[str, Any]:
    statuses = results_queries.statuses_of_test(tx, node_key(node_id))
    backends = []
    for status in statuses:
        if repo is not None and status["repo"] != repo:
            continue
        backend = str(status["repo"])
        entries, last_pass = entries_of(status)
        newest = entries[0] if entries else None
        judged = verdict(entries, last_pass, now, newest.sha if newest else None, None)
        recent = results_queries.recent_failures_of_test(
            tx, backend, int(status["test_key"]), RECENT_FAILURES
        )
        backends.append(
            {
                "repo": backend,
                "history": history_view(entries, backend),
                "last_outcome": newest.as_dict()["outcome"] if newest else None,
                "suspect": judged["suspect"],
                "flaky_now": judged["flaky"],
                "flaky_count": int(status["flaky_count"] or 0),
                "flaky_at": status["flaky_at"],
                "last_pass": last_pass.as_dict() if last_pass else None,
                "failures": [
                    {
                        **message_of(f),
                        "head_sha": f["head_sha"],
                        "at": f["event_at"],
                        "url": run_url(str(f["delivery_id"]), backend),
                    }
                    for f in recent
                ],
            }
        )
    return {"now": now, "id": node_id, "repo": repo, "backends": backends}
