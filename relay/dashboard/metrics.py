"""The metrics page model: daily success rate, queue and execution time per backend."""

from __future__ import annotations

from typing import Any

from relay.dashboard import queries
from relay.dashboard.rollup import Rollups
from relay.dashboard.stats import DAY, median
from relay.store.base import Tx

MAX_DAYS = 30


def metrics_page(tx: Tx, now: float, days: int, rollups: Rollups) -> dict[str, Any]:
    """`days` UTC days ending today; one point per day (None = no jobs that day):
    the success rate and the medians of queue and execution time."""
    series = []
    for repo in queries.backend_repos(tx):
        daily = rollups.daily(tx, repo, now, days)
        if not any(day.jobs for _, day in daily):
            continue  # a backend without results in the window gets no line (nor a colour)
        points = [
            {
                "day": start,
                "jobs": day.jobs,
                "success_rate": day.pass_rate.rate,
                "queue_time": median(day.queue),
                "execution_time": median(day.execution),
            }
            for start, day in daily
        ]
        series.append({"repo": repo, "points": points})
    start = int(now // DAY) * int(DAY) - (days - 1) * int(DAY)
    return {"now": now, "days": days, "start": start, "series": series}
