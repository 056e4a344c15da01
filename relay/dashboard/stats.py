"""Pure statistics over job results: pass rates, medians, percentiles.

No I/O here: the query layer hands in plain tuples and the views hand the
numbers to templates and JSON alike, so both always show the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DAY = 86_400.0

# Conclusions that say nothing about the backend's health: a run skipped by a
# paths filter or cancelled because a newer push superseded it. They are left
# out of pass rates so that busy PRs do not look like failures.
NON_DECISIVE = frozenset({"skipped", "neutral", "cancelled", "stale"})
# The failure kind (job_runs.failure_kind) of a run that failed around its tests, not in
# them: left out of pass rates and L3 readiness, counted on its own.
INFRASTRUCTURE = "infrastructure"


@dataclass(frozen=True)
class PassRate:
    """Share of decisive completed jobs that succeeded; `rate` is None with no data."""

    passed: int
    decisive: int

    @property
    def rate(self) -> float | None:
        return self.passed / self.decisive if self.decisive else None

    def as_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "decisive": self.decisive, "rate": self.rate}


def pass_rate(conclusions: Iterable[str | None]) -> PassRate:
    """Over decisive jobs (callers leave infrastructure failures out first)."""
    passed = decisive = 0
    for conclusion in conclusions:
        if conclusion is None or conclusion in NON_DECISIVE:
            continue
        decisive += 1
        passed += conclusion == "success"
    return PassRate(passed=passed, decisive=decisive)


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50.0)


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Linear-interpolated percentile (the 'inclusive' method); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    if low == high:
        return float(ordered[low])
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def share_over(values: Sequence[float], threshold: float) -> float | None:
    """Share of values strictly above `threshold`; None when empty."""
    if not values:
        return None
    return sum(1 for v in values if v > threshold) / len(values)
