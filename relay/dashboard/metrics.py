"""The metrics page model: daily success rate, queue and execution time per backend."""

from __future__ import annotations

from typing import Any

from relay.dashboard import queries
from relay.dashboard.stats import DAY
from relay.store.base import Tx

MAX_DAYS = 30


def metrics_page(tx: Tx, now: float, days: int) -> dict[str, Any]:
    """`days` whole UTC days ending today; each series has one point per day (None = no jobs)."""
    today = int(now // DAY) * int(DAY)
    start = today - (days - 1) * int(DAY)
    series = []
    for repo in queries.backend_repos(tx):
        daily = {int(r["day"]): r for r in queries.daily_figures(tx, repo, start)}
        points = []
        for day in range(days):
            row = daily.get(day)
            decisive = int(row["decisive"] or 0) if row else 0
            points.append(
                {
                    "day": start + day * int(DAY),
                    "success_rate": int(row["passed"] or 0) / decisive
                    if row and decisive
                    else None,
                    "queue_time": row["queue_time"] if row else None,
                    "execution_time": row["execution_time"] if row else None,
                }
            )
        if daily:  # a backend without results in the window gets no line (nor a colour)
            series.append({"repo": repo, "points": points})
    return {"now": now, "days": days, "start": start, "series": series}
