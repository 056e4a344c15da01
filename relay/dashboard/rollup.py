"""Per-day job figures of each backend, cached once a UTC day is over.

A job's day is the day of its `completed_received_at`, the relay's clock when its
result arrived, so a day that is over (plus a settling margin for the clocks of
other relay processes) never gains rows: its figures can be computed once and
kept. A window ("the last 14 days") is then the cached closed days plus one small
query for the open part of today. Entries expire after a TTL (with jitter, so
they do not all expire at once) so that pruning and late writers are picked up.

Windows are whole UTC days: "7 days" is today and the 6 days before.
"""

from __future__ import annotations

import random
import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

from relay.dashboard import stats
from relay.dashboard.queries import backend_repos
from relay.dashboard.readiness import LONG_JOB, WindowFigures
from relay.store.base import Store, Tx

DAY = int(stats.DAY)
SETTLE_SECONDS = 600.0
TTL_SECONDS = 3600.0


@dataclass(frozen=True)
class DayStats:
    """Completed jobs of one backend over some span; value lists are sorted.

    Infrastructure failures (checkout, install, selection, runner; relay/results/classify.py)
    say nothing about the backend's code: they are counted in `infrastructure` only, and
    every other figure (jobs, pass rate, times, the L3 criteria) leaves them out.
    """

    jobs: int
    passed: int
    decisive: int
    timed_out: int
    queue: tuple[float, ...]
    execution: tuple[float, ...]
    end_to_end: tuple[float, ...]
    infrastructure: int = 0

    @property
    def pass_rate(self) -> stats.PassRate:
        return stats.PassRate(self.passed, self.decisive)

    def figures(self) -> WindowFigures:
        """The aggregates the L3 criteria are judged on."""
        return WindowFigures(
            jobs=self.jobs,
            passed=self.passed,
            decisive=self.decisive,
            timed_out=self.timed_out,
            avg_queue=stats.mean(self.queue),
            p50_end_to_end=stats.median(self.end_to_end),
            long_jobs=len(self.end_to_end) - bisect_right(self.end_to_end, LONG_JOB),
            timed_jobs=len(self.end_to_end),
        )


EMPTY = DayStats(0, 0, 0, 0, (), (), ())
Row = tuple[str | None, str | None, float | None, float | None]


def day_stats(rows: Iterable[Row]) -> DayStats:
    """From (conclusion, failure_kind, queue_time, execution_time) rows of completed jobs."""
    jobs = passed = decisive = timed_out = infrastructure = 0
    queue: list[float] = []
    execution: list[float] = []
    end_to_end: list[float] = []
    non_decisive = stats.NON_DECISIVE
    for conclusion, kind, q, e in rows:
        if kind == stats.INFRASTRUCTURE:
            infrastructure += 1
            continue
        jobs += 1
        if conclusion is not None and conclusion not in non_decisive:
            decisive += 1
            passed += conclusion == "success"
            timed_out += conclusion == "timed_out"
        if q is not None:
            queue.append(q)
            if e is not None:
                end_to_end.append(q + e)
        if e is not None:
            execution.append(e)
    queue.sort()
    execution.sort()
    end_to_end.sort()
    return DayStats(
        jobs=jobs,
        passed=passed,
        decisive=decisive,
        timed_out=timed_out,
        queue=tuple(queue),
        execution=tuple(execution),
        end_to_end=tuple(end_to_end),
        infrastructure=infrastructure,
    )


def merge(parts: Sequence[DayStats]) -> DayStats:
    if len(parts) == 1:
        return parts[0]
    # Concatenated sorted runs: Timsort merges them in near-linear time.
    return DayStats(
        jobs=sum(p.jobs for p in parts),
        passed=sum(p.passed for p in parts),
        decisive=sum(p.decisive for p in parts),
        timed_out=sum(p.timed_out for p in parts),
        queue=_merged(p.queue for p in parts),
        execution=_merged(p.execution for p in parts),
        end_to_end=_merged(p.end_to_end for p in parts),
        infrastructure=sum(p.infrastructure for p in parts),
    )


def _merged(runs: Iterable[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(sorted(chain.from_iterable(runs)))


def pass_rate_of(parts: Sequence[DayStats]) -> stats.PassRate:
    """The pass rate over several days without merging their value lists."""
    return stats.PassRate(sum(p.passed for p in parts), sum(p.decisive for p in parts))


class Rollups:
    """Thread-safe cache of closed days, shared by the requests of one relay process."""

    def __init__(
        self, ttl: float = TTL_SECONDS, settle: float = SETTLE_SECONDS, seed: int | None = None
    ) -> None:
        self.ttl = ttl
        self._settle = settle
        self._cache: dict[tuple[str, int], tuple[float, DayStats]] = {}
        self._computing: dict[tuple[str, int], threading.Event] = {}
        self._lock = threading.Lock()
        self._random = random.Random(seed)

    def window(self, tx: Tx, repo: str, now: float, days: int) -> DayStats:
        """Jobs completed today and on the `days - 1` UTC days before."""
        return merge([s for _, s in self.daily(tx, repo, now, days)])

    def daily(
        self, tx: Tx, repo: str, now: float, days: int, renew_within: float = 0.0
    ) -> list[tuple[int, DayStats]]:
        """One entry per UTC day (start, figures), oldest first; today is partial.
        Cached days expiring within `renew_within` seconds are computed again."""
        today = int(now // DAY) * DAY
        closed_before = int((now - self._settle) // DAY) * DAY
        out = []
        for start in range(today - (days - 1) * DAY, today + DAY, DAY):
            if start + DAY <= closed_before:
                out.append((start, self._closed_day(tx, repo, start, now, renew_within)))
            else:
                out.append((start, _query(tx, repo, start, start + DAY)))
        return out

    def warm(self, store: Store, now: float, days: int) -> int:
        """Fill the cache for every backend (the last 14 days first, then `days`), renewing
        entries that would expire within half the TTL; return the number of backends.
        Short read transactions, one per backend."""
        with store.transaction(write=False) as tx:
            repos = backend_repos(tx)
        for horizon in sorted({min(14, days), days}):
            for repo in repos:
                with store.transaction(write=False) as tx:
                    self.daily(tx, repo, now, horizon, renew_within=self.ttl / 2)
        return len(repos)

    def _closed_day(
        self, tx: Tx, repo: str, start: int, now: float, renew_within: float
    ) -> DayStats:
        key = (repo, start)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] > now + renew_within:
                return hit[1]
            running = self._computing.get(key)
            if running is None:
                self._computing[key] = threading.Event()
        if running is not None:
            # Another thread (the warm-up, a concurrent request) is reading this day:
            # wait for its result instead of reading the same rows again.
            running.wait(timeout=30)
            with self._lock:
                hit = self._cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
            return _query(tx, repo, start, start + DAY)
        try:
            computed = _query(tx, repo, start, start + DAY)
            expires = now + self.ttl * (1 + 0.25 * self._random.random())
            with self._lock:
                self._cache[key] = (expires, computed)
                self._drop_expired(now)
        finally:
            with self._lock:
                self._computing.pop(key).set()
        return computed

    def _drop_expired(self, now: float) -> None:
        for key in [k for k, (expires, _) in self._cache.items() if expires <= now]:
            del self._cache[key]


def _query(tx: Tx, repo: str, start: float, end: float) -> DayStats:
    rows = tx.fetchall(
        "SELECT conclusion, failure_kind, queue_time, execution_time FROM job_runs"
        " WHERE repo = ? AND completed_received_at >= ? AND completed_received_at < ?",
        (repo, start, end),
    )
    if not rows:
        return EMPTY
    return day_stats(
        (r["conclusion"], r["failure_kind"], r["queue_time"], r["execution_time"]) for r in rows
    )
