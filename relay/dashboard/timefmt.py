"""Pure formatting of times and durations for the dashboard (always UTC)."""

from __future__ import annotations

from datetime import UTC, datetime

NO_VALUE = "\u2014"  # an em dash: "no figure", distinct from zero


def utc_iso(ts: float | None) -> str | None:
    """`2026-11-30T04:05:06Z`, the form used in JSON and in `<time datetime>`."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_text(ts: float | None) -> str:
    """`2026-11-30 04:05 UTC`, the form shown to people."""
    if ts is None:
        return "never"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def duration_text(seconds: float | None) -> str:
    """Compact duration: `42 s`, `7 min`, `2 h 05 min`, `3 d 4 h`; an em dash when unknown."""
    if seconds is None:
        return NO_VALUE
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    minutes, _ = divmod(s, 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def relative_age(ts: float | None, now: float) -> str:
    """`just now`, `5 min ago`, `3 h ago`, `2 d ago`; `in 5 min` for clock skew; `never`."""
    if ts is None:
        return "never"
    delta = now - ts
    if abs(delta) < 45:
        return "just now"
    text = _coarse(abs(delta))
    return f"{text} ago" if delta > 0 else f"in {text}"


def _coarse(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{max(minutes, 1)} min"
    hours = round(seconds / 3600)
    if hours < 48:
        return f"{hours} h"
    return f"{round(seconds / 86400)} d"


def percent_text(rate: float | None) -> str:
    if rate is None:
        return NO_VALUE
    return f"{rate * 100:.1f} %"
