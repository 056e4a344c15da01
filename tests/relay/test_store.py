"""The store contract on both dialects: migrations, transactions, outbox claiming."""

from __future__ import annotations

import threading

import pytest

from relay.outbox import (
    claim,
    complete,
    dead_letter,
    enqueue,
    list_dead_letters,
    prune,
    queue_stats,
    requeue_dead_letters,
    retry_later,
)
from relay.store import BadStoreURL, Store, StoreUnavailable, open_store
from relay.store.migrate import applied_versions, load_migrations

CONTRACT_TABLES = {
    "deliveries",
    "outbox",
    "dead_letters",
    "dispatches",
    "job_runs",
    "hud_rows",
    "selection_reports",
    "repo_levels",
}


def _tables(store: Store) -> set[str]:
    with store.transaction(write=False) as tx:
        if store.dialect == "sqlite":
            rows = tx.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = tx.fetchall(
                "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'"
            )
    return {r["name"] for r in rows}


def test_migrations_create_every_contract_table_once(store: Store) -> None:
    assert _tables(store) >= CONTRACT_TABLES
    assert store.migrate() == []  # a second start applies nothing
    assert applied_versions(store) == [m.version for m in load_migrations(store.dialect)]


def test_ingest_range_migrations_are_numbered_001_to_049() -> None:
    ours = [m for m in load_migrations("sqlite") if m.version < 50]
    assert [m.version for m in ours] == list(range(1, len(ours) + 1))


def test_transaction_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction() as tx:
        enqueue(tx, kind="dispatch", target="o/r", body={}, dedupe_key="k", now=1.0)
        raise RuntimeError("boom")
    assert queue_stats(store, now=2.0).pending == {}


def test_enqueue_is_idempotent_on_dedupe_key(store: Store) -> None:
    with store.transaction() as tx:
        assert enqueue(tx, kind="dispatch", target="o/r", body={"a": 1}, dedupe_key="k", now=1.0)
        assert not enqueue(
            tx, kind="dispatch", target="o/r", body={"a": 2}, dedupe_key="k", now=1.0
        )
    assert queue_stats(store, now=2.0).pending == {"dispatch": 1}


def test_claim_leases_a_job_until_the_lease_expires(store: Store) -> None:
    with store.transaction() as tx:
        enqueue(tx, kind="dispatch", target="o/r", body={"x": 1}, dedupe_key="k", now=10.0)
    [job] = claim(store, owner="w1", kinds=["dispatch"], now=10.0, lease_seconds=30)
    assert job.body == {"x": 1} and job.attempts == 1
    assert claim(store, owner="w2", kinds=["dispatch"], now=20.0, lease_seconds=30) == []
    [again] = claim(store, owner="w2", kinds=["dispatch"], now=41.0, lease_seconds=30)
    assert again.job_id == job.job_id and again.attempts == 2
    assert not complete(store, job, owner="w1", now=42.0)  # w1 lost its lease
    assert complete(store, again, owner="w2", now=42.0)
    assert claim(store, owner="w3", kinds=["dispatch"], now=999.0, lease_seconds=30) == []


def test_claim_only_takes_ready_jobs_of_the_given_kinds(store: Store) -> None:
    with store.transaction() as tx:
        enqueue(tx, kind="hud", target="o/r", body={}, dedupe_key="h", now=1.0)
        enqueue(
            tx,
            kind="dispatch",
            target="o/r",
            body={},
            dedupe_key="later",
            now=1.0,
            not_before=100.0,
        )
    assert claim(store, owner="w", kinds=["dispatch"], now=50.0, lease_seconds=5) == []
    assert [
        j.dedupe_key
        for j in claim(store, owner="w", kinds=["dispatch"], now=100.0, lease_seconds=5)
    ] == ["later"]


def test_retry_then_dead_letter_then_requeue(store: Store) -> None:
    with store.transaction() as tx:
        enqueue(
            tx, kind="dispatch", target="o/r", body={}, dedupe_key="k", delivery_id="d1", now=1.0
        )
    [job] = claim(store, owner="w", kinds=["dispatch"], now=1.0, lease_seconds=5)
    assert job.first_failed_at is None
    assert retry_later(store, job, owner="w", error="502", now=2.0, next_attempt_at=60.0)
    assert claim(store, owner="w", kinds=["dispatch"], now=59.0, lease_seconds=5) == []
    [job] = claim(store, owner="w", kinds=["dispatch"], now=60.0, lease_seconds=5)
    assert job.first_failed_at == 2.0  # the first failure's time, kept across retries
    assert retry_later(store, job, owner="w", error="503", now=61.0, next_attempt_at=61.0)
    [job] = claim(store, owner="w", kinds=["dispatch"], now=61.0, lease_seconds=5)
    assert job.first_failed_at == 2.0
    assert dead_letter(store, job, owner="w", error="gave up", now=61.0)
    [dead] = list_dead_letters(store)
    assert (dead["job_id"], dead["attempts"], dead["last_error"]) == (job.job_id, 3, "gave up")
    assert queue_stats(store, now=62.0).dead_letters == 1
    assert requeue_dead_letters(store, now=70.0) == 1
    [back] = claim(store, owner="w", kinds=["dispatch"], now=70.0, lease_seconds=5)
    # Requeued: fresh attempts and a fresh retry window.
    assert (back.job_id, back.attempts, back.first_failed_at) == (job.job_id, 1, None)
    assert list_dead_letters(store) == []


def test_concurrent_claimers_never_share_a_job(store: Store) -> None:
    with store.transaction() as tx:
        for i in range(40):
            enqueue(tx, kind="dispatch", target="o/r", body={}, dedupe_key=f"k{i}", now=1.0)
    taken: list[str] = []
    lock = threading.Lock()

    def drain(owner: str) -> None:
        while jobs := claim(
            store, owner=owner, kinds=["dispatch"], now=2.0, lease_seconds=60, limit=3
        ):
            with lock:
                taken.extend(j.job_id for j in jobs)

    threads = [threading.Thread(target=drain, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(taken) == 40 and len(set(taken)) == 40


def test_prune_keeps_recent_rows_and_deliveries_with_pending_work(store: Store) -> None:
    day = 86400.0
    with store.transaction() as tx:
        for delivery_id, at in (("old", 0.0), ("old-pending", 0.0), ("new", 5 * day)):
            tx.execute(
                "INSERT INTO deliveries (delivery_id, event, route, payload, received_at) VALUES (?, 'push', 'dispatch', '{}', ?)",
                (delivery_id, at),
            )
        enqueue(
            tx,
            kind="dispatch",
            target="o/r",
            body={},
            dedupe_key="p",
            delivery_id="old-pending",
            now=0.0,
        )
        for delivery_id, at in (("old", 0.0), ("new", 5 * day)):
            tx.execute(
                "INSERT INTO dispatch_claims (delivery_id, repo, run_id, run_attempt, claimed_by,"
                " claimed_at) VALUES (?, 'o/r', 1, 1, 'claim', ?)",
                (delivery_id, at),
            )
    counts = prune(store, older_than=5 * day - 3 * day)
    assert counts["deliveries"] == 1 and counts["dispatch_claims"] == 1
    with store.transaction(write=False) as tx:
        left = {r["delivery_id"] for r in tx.fetchall("SELECT delivery_id FROM deliveries")}
        claims = {r["delivery_id"] for r in tx.fetchall("SELECT delivery_id FROM dispatch_claims")}
    assert left == {"old-pending", "new"} and claims == {"new"}


def test_bad_store_url_names_the_expected_forms() -> None:
    with pytest.raises(BadStoreURL, match="sqlite:///PATH or postgresql://"):
        open_store("mysql://x")


def test_missing_sqlite_directory_is_unavailable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path / 'nope' / 'relay.db'}")
    with pytest.raises(StoreUnavailable, match="does not exist"):
        store.ping()


@pytest.mark.postgres
def test_unreachable_postgres_is_unavailable() -> None:
    from tests.support.postgres import free_port

    store = open_store(f"postgresql://nobody@127.0.0.1:{free_port()}/none", busy_timeout=1)
    with pytest.raises(StoreUnavailable):
        store.ping()


def test_run_write_commits_concurrent_writes_and_isolates_a_failing_one(store: Store) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def write(i: int) -> bool:
        def fn(tx) -> bool:  # type: ignore[no-untyped-def]
            if i == 7:
                enqueue(tx, kind="dispatch", target="o/r", body={}, dedupe_key="poison", now=1.0)
                raise ValueError("bad write")
            return enqueue(tx, kind="dispatch", target="o/r", body={}, dedupe_key=f"k{i}", now=1.0)

        return store.run_write(fn)

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(write, i) for i in range(40)]
    results = [f.exception() or f.result() for f in futures]
    assert isinstance(results[7], ValueError)
    assert all(r is True for i, r in enumerate(results) if i != 7)
    with store.transaction(write=False) as tx:
        keys = {r["dedupe_key"] for r in tx.fetchall("SELECT dedupe_key FROM outbox")}
    assert keys == {f"k{i}" for i in range(40) if i != 7}  # the failing write left nothing


def test_sqlite_wal_mode_and_durable_sync_are_set(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    try:
        with store.transaction(write=False) as tx:
            assert tx.scalar("PRAGMA journal_mode") == "wal"
            assert tx.scalar("PRAGMA synchronous") == 2  # FULL
    finally:
        store.close()


def test_a_rolled_back_transaction_leaves_a_usable_connection(store: Store) -> None:
    for _ in range(3):
        with pytest.raises(ValueError), store.transaction() as tx:
            tx.execute("INSERT INTO repo_levels (repo, since, level) VALUES ('o/r', 1, 'L1')")
            raise ValueError("a 400 answer")
    with store.transaction() as tx:
        tx.execute("INSERT INTO repo_levels (repo, since, level) VALUES ('o/r', 1, 'L1')")
    with store.transaction(write=False) as tx:
        assert tx.scalar("SELECT COUNT(*) FROM repo_levels") == 1
