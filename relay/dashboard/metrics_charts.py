"""The three SVG charts of the metrics page, built from its page model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from relay.dashboard.charts import Series, line_chart
from relay.dashboard.stats import DAY
from relay.dashboard.timefmt import duration_text

_CHARTS = (
    ("success_rate", "Success rate", "Share of decisive jobs that passed, per day."),
    ("queue_time", "Queue time", "Daily median of dispatch → job started (in_progress callback)."),
    ("execution_time", "Execution time", "Daily median of job started → completed callback."),
)


def charts_for(page: dict[str, Any]) -> dict[str, Any]:
    start = float(page["start"])
    end = start + (int(page["days"]) - 1) * DAY
    days = int(page["days"])
    step = max(1, -(-days // 7))  # at most about 7 labels, always on whole days
    ticks = [end - i * DAY for i in range(0, days, step)]
    charts = []
    for key, title, note in _CHARTS:
        series = [
            Series(s["repo"], [(p["day"], p[key]) for p in s["points"]]) for s in page["series"]
        ]
        is_rate = key == "success_rate"
        svg = line_chart(
            f"{title} per backend",
            series,
            (start, end),
            1.0 if is_rate else None,
            _percent if is_rate else duration_text,
            _day,
            ticks,
        )
        charts.append({"title": title, "svg": svg, "note": note})
    return {"charts": charts}


def _percent(value: float) -> str:
    return f"{value * 100:.0f} %"


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%b %d")
