"""Per-day figures: closed days are computed once, today always fresh, windows whole days."""

from __future__ import annotations

from relay.dashboard.rollup import DAY, Rollups, day_stats, merge
from relay.store import Store

NOW = 1_800_000_000.0 - 1_800_000_000.0 % DAY + 12 * 3600  # noon UTC
TODAY = NOW - 12 * 3600


def _job(store: Store, name: str, at: float, conclusion: str, queue: float, run: float) -> None:
    with store.transaction() as tx:
        tx.execute(
            "INSERT INTO job_runs (delivery_id, repo, run_id, run_attempt, job_name, status,"
            " conclusion, completed_received_at, queue_time, execution_time, updated_at)"
            " VALUES (?, 'a/b', 1, 1, ?, 'completed', ?, ?, ?, ?, ?)",
            (name, name, conclusion, at, queue, run, at),
        )


def test_windows_are_whole_utc_days_including_today(store: Store) -> None:
    _job(store, "today", TODAY + 60, "success", 10, 100)
    _job(store, "six-days-ago", TODAY - 6 * DAY + 1, "failure", 20, 200)
    _job(store, "seven-days-ago", TODAY - 6 * DAY - 1, "success", 30, 300)
    with store.transaction(write=False) as tx:
        week = Rollups().window(tx, "a/b", NOW, 7)
    assert (week.jobs, week.passed, week.decisive) == (2, 1, 2)
    assert week.queue == (10.0, 20.0)
    assert week.end_to_end == (110.0, 220.0)


def test_closed_days_are_cached_and_today_is_not(store: Store) -> None:
    rollups = Rollups(seed=1)
    _job(store, "yesterday", TODAY - DAY + 5, "success", 1, 1)
    _job(store, "today", TODAY + 5, "success", 1, 1)
    with store.transaction(write=False) as tx:
        assert rollups.window(tx, "a/b", NOW, 2).jobs == 2
    # A row appearing on a closed day (a late writer) is not seen until the entry expires;
    # a new row today is seen at once.
    _job(store, "late", TODAY - DAY + 50, "success", 1, 1)
    _job(store, "today-2", TODAY + 50, "success", 1, 1)
    with store.transaction(write=False) as tx:
        assert rollups.window(tx, "a/b", NOW + 60, 2).jobs == 3
        assert rollups.window(tx, "a/b", NOW + 2 * 3600, 2).jobs == 4  # past the TTL


def test_a_day_just_over_is_not_cached_until_it_settles(store: Store) -> None:
    rollups = Rollups(settle=600)
    just_after_midnight = TODAY + DAY + 60
    _job(store, "late-clock", TODAY + DAY - 1, "success", 1, 1)
    with store.transaction(write=False) as tx:
        assert rollups.window(tx, "a/b", just_after_midnight, 2).jobs == 1
    _job(store, "later-clock", TODAY + DAY - 2, "failure", 1, 1)  # another process, behind
    with store.transaction(write=False) as tx:
        assert rollups.window(tx, "a/b", just_after_midnight + 1, 2).jobs == 2


def test_merge_equals_computing_over_all_rows() -> None:
    rows_a: list[tuple[str, str | None, float | None, float | None]] = [
        ("success", None, 5.0, 50.0),
        ("failure", "test", 1.0, None),
        ("cancelled", "cancelled", 9.0, 90.0),
        ("failure", "infrastructure", 0.5, 3.0),  # a failed checkout: counted apart
    ]
    rows_b: list[tuple[str, str | None, float | None, float | None]] = [
        ("timed_out", "timeout", 3.0, 30000.0),
        ("success", None, None, 10.0),
    ]
    merged = merge([day_stats(rows_a), day_stats(rows_b)])
    assert merged == day_stats(rows_a + rows_b)
    assert merged.infrastructure == 1 and 0.5 not in merged.queue
    figures = merged.figures()
    assert (figures.jobs, figures.passed, figures.decisive, figures.timed_out) == (5, 2, 4, 1)
    assert figures.long_jobs == 1 and figures.timed_jobs == 3
    assert figures.p50_end_to_end == 99.0


def test_warm_fills_every_closed_day_so_a_page_only_reads_today(store: Store) -> None:
    from relay.dashboard.explain import RecordingTx

    _job(store, "old", TODAY - 20 * DAY, "success", 1, 1)
    _job(store, "today", TODAY + 5, "failure", 1, 1)
    rollups = Rollups()
    assert rollups.warm(store, NOW, 30) == 1
    with store.transaction(write=False) as tx:
        recorder = RecordingTx(tx)
        month = rollups.window(recorder, "a/b", NOW, 30)
    assert (month.jobs, month.passed) == (2, 1)
    assert len(recorder.queries) == 1  # today's rows only


def test_warm_renews_entries_before_they_expire(store: Store) -> None:
    from relay.dashboard.explain import RecordingTx

    _job(store, "old", TODAY - 3 * DAY, "success", 1, 1)
    rollups = Rollups(ttl=3600)
    rollups.warm(store, NOW, 7)
    _job(store, "late", TODAY - 3 * DAY + 9, "failure", 1, 1)  # seen only by a recomputation
    # Every entry expires 3600-4500 s after the first warm-up; at 2800 s all are within
    # half a TTL (1800 s) of expiring, so this warm-up renews them all.
    rollups.warm(store, NOW + 2800, 7)
    with store.transaction(write=False) as tx:
        recorder = RecordingTx(tx)
        week = rollups.window(recorder, "a/b", NOW + 3700, 7)  # past the first expiry
    assert week.jobs == 2
    assert len(recorder.queries) == 1  # still cached: today's rows only


def test_concurrent_readers_of_one_closed_day_read_it_once(store: Store) -> None:
    import threading

    from relay.dashboard.explain import RecordingTx

    day = TODAY - 2 * DAY
    _job(store, "old", day + 5, "success", 1, 1)
    rollups = Rollups()
    reading = threading.Event()
    release = threading.Event()

    class SlowTx(RecordingTx):
        """Holds its first query until released, as a slow read of a big day would."""

        def fetchall(self, sql, params=()):  # type: ignore[no-untyped-def]
            if not reading.is_set():
                reading.set()
                assert release.wait(10)
            return super().fetchall(sql, params)

    seen: dict[str, int] = {}

    def read(name: str, wrap: type[RecordingTx], log: list[object]) -> None:
        with store.transaction(write=False) as tx:
            recorder = wrap(tx)
            seen[name] = rollups.daily(recorder, "a/b", NOW, 3)[0][1].jobs
            log.extend(params[1] for _, params in recorder.queries)

    slow_log: list[object] = []
    other_log: list[object] = []
    slow = threading.Thread(target=read, args=("slow", SlowTx, slow_log))
    slow.start()
    assert reading.wait(10)  # the slow reader is inside the query of `day`
    other = threading.Thread(target=read, args=("other", RecordingTx, other_log))
    other.start()
    release.set()
    slow.join(10)
    other.join(10)
    assert seen == {"slow": 1, "other": 1}
    assert slow_log.count(day) == 1
    assert day not in other_log  # it waited for the slow reader's result
