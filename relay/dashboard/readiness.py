"""L3 readiness: the six ratified promotion criteria, computed from stored rows (pure).

RFC-0050 as ratified: average queue < 30 min, end-to-end P50 < 3 h, < 1 % of
jobs over 3 h, timeout rate < 1 %, job pass rate > 90 %, over a 14-day window,
after at least a month at L2. Each criterion is reported with the value it was
judged on so that a backend team sees how far it is from the bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relay.dashboard import stats
from relay.dashboard.timefmt import duration_text, percent_text

WINDOW_DAYS = 14
MIN_DAYS_AT_L2 = 30
MAX_AVG_QUEUE = 30 * 60.0
MAX_P50_END_TO_END = 3 * 3600.0
LONG_JOB = 3 * 3600.0
MAX_LONG_SHARE = 0.01
MAX_TIMEOUT_RATE = 0.01
MIN_PASS_RATE = 0.90


@dataclass(frozen=True)
class JobSample:
    """One completed job inside the window."""

    conclusion: str | None
    queue_time: float | None
    execution_time: float | None
    failure_kind: str | None = None


@dataclass(frozen=True)
class WindowFigures:
    """The aggregates the criteria need; the store computes them in SQL."""

    jobs: int
    passed: int
    decisive: int
    timed_out: int
    avg_queue: float | None
    p50_end_to_end: float | None
    long_jobs: int  # end-to-end over 3 h
    timed_jobs: int  # jobs with both a queue and an execution time


def figures_from_samples(samples: Sequence[JobSample]) -> WindowFigures:
    """The same aggregates from individual jobs (what the SQL computes, in Python);
    infrastructure failures are left out, as the day rollups do."""
    samples = [s for s in samples if s.failure_kind != stats.INFRASTRUCTURE]
    queues = [s.queue_time for s in samples if s.queue_time is not None]
    end_to_end = [
        s.queue_time + s.execution_time
        for s in samples
        if s.queue_time is not None and s.execution_time is not None
    ]
    rate = stats.pass_rate(s.conclusion for s in samples)
    return WindowFigures(
        jobs=len(samples),
        passed=rate.passed,
        decisive=rate.decisive,
        timed_out=sum(1 for s in samples if s.conclusion == "timed_out"),
        avg_queue=stats.mean(queues),
        p50_end_to_end=stats.median(end_to_end),
        long_jobs=sum(1 for v in end_to_end if v > LONG_JOB),
        timed_jobs=len(end_to_end),
    )


@dataclass(frozen=True)
class Criterion:
    key: str
    label: str
    met: bool
    value: str
    raw: float | None

    def as_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "label": self.label,
            "met": self.met,
            "value": self.value,
            "raw": self.raw,
        }


@dataclass(frozen=True)
class Readiness:
    criteria: tuple[Criterion, ...]
    jobs: int

    @property
    def ready(self) -> bool:
        return all(c.met for c in self.criteria)

    @property
    def met_count(self) -> int:
        return sum(c.met for c in self.criteria)

    def as_dict(self) -> dict[str, object]:
        return {
            "ready": self.ready,
            "met": self.met_count,
            "of": len(self.criteria),
            "window_days": WINDOW_DAYS,
            "jobs": self.jobs,
            "criteria": [c.as_dict() for c in self.criteria],
        }


def evaluate(
    level: str | None, level_since: float | None, figures: WindowFigures, now: float
) -> Readiness:
    """Judge the six criteria; `level`/`level_since` is the backend's current allowlist entry."""
    f = figures
    long_share = f.long_jobs / f.timed_jobs if f.timed_jobs else None
    criteria = (
        _time_at_l2(level, level_since, now),
        _below("avg_queue", "Average queue < 30 min", f.avg_queue, MAX_AVG_QUEUE, True),
        _below(
            "p50_end_to_end", "End-to-end P50 < 3 h", f.p50_end_to_end, MAX_P50_END_TO_END, True
        ),
        _below("long_jobs", "< 1 % of jobs over 3 h", long_share, MAX_LONG_SHARE, False),
        _below(
            "timeout_rate",
            "Timeout rate < 1 %",
            f.timed_out / f.jobs if f.jobs else None,
            MAX_TIMEOUT_RATE,
            False,
        ),
        _pass_rate(stats.PassRate(f.passed, f.decisive)),
    )
    return Readiness(criteria=criteria, jobs=f.jobs)


def _time_at_l2(level: str | None, since: float | None, now: float) -> Criterion:
    label = "At least a month at L2"
    if level is None:
        return Criterion("time_at_l2", label, False, "not in the allowlist", None)
    if since is None:
        return Criterion(
            "time_at_l2", label, level in ("L3", "L4"), f"{level}, since unknown", None
        )
    days = (now - since) / stats.DAY
    if level == "L2":
        return Criterion("time_at_l2", label, days >= MIN_DAYS_AT_L2, f"{days:.0f} d at L2", days)
    if level in ("L3", "L4"):
        return Criterion("time_at_l2", label, True, f"already {level}", days)
    return Criterion("time_at_l2", label, False, f"at {level}, not L2", days)


def _below(key: str, label: str, value: float | None, limit: float, is_time: bool) -> Criterion:
    if value is None:
        return Criterion(key, label, False, "no data", None)
    text = duration_text(value) if is_time else percent_text(value)
    return Criterion(key, label, value < limit, text, value)


def _pass_rate(rate: stats.PassRate) -> Criterion:
    label = "Job pass rate > 90 %"
    if rate.rate is None:
        return Criterion("pass_rate", label, False, "no data", None)
    return Criterion(
        "pass_rate", label, rate.rate > MIN_PASS_RATE, percent_text(rate.rate), rate.rate
    )
