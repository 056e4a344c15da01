"""Dashboard render times with real volumes, and the query plans behind each page.

Seeds 30 days x 10 backends x 300 upstream events a day (direct store inserts;
about 216k job runs, 90k dispatches, 72k selection summaries, 9k full-size webhooks)
plus per-test results (every run of 2,000 of a backend's 3,000 tests: full histories
in test_status, the failed tests of every failed job in test_failures; bench/
results_seed.py) into a fresh store, serves it with the real relay (`spyre-ci relay
serve`, uvicorn, loopback), times every page over HTTP, and prints the query plan of
each query a page runs, flagging full scans of big tables. Target: every page
< 300 ms on 2 cores. Last, it times what a completed callback carrying 2,000 test
results adds to the callback's transaction (`record_completed`), on the same store.

Usage: python bench/bench_dashboard.py [--store sqlite|postgres] [--days 30] [--events 300]
                                       [--repeat 7]
(`--store postgres` starts a throwaway PostgreSQL server from Debian's packages.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from dashboard_seed import BACKENDS, SeedShape, seed  # noqa: E402
from results_seed import reused_test_ids, seed_results  # noqa: E402

from relay.callbacks.state_machine import JobKey  # noqa: E402
from relay.dashboard import grid, metrics, views  # noqa: E402
from relay.dashboard.explain import page_plans  # noqa: E402
from relay.dashboard.per_test import one_test_page  # noqa: E402
from relay.dashboard.rollup import Rollups  # noqa: E402
from relay.dashboard.search import parse_search  # noqa: E402
from relay.results.records import record_completed  # noqa: E402
from relay.results.report import RunReport  # noqa: E402
from relay.store import Store, Tx, open_store  # noqa: E402
from tests.support.relay_server import RelayServer, write_relay_config  # noqa: E402

TARGET_MS = 300.0
Builder = Callable[[Tx, float], Any]


def _pages(store: Store) -> list[tuple[str, str, Builder | None]]:
    """(label, path, page builder for the query plans) of every page, on recent data."""
    repo = BACKENDS[0][0]
    rollups = Rollups()  # the plans below are recorded cold: every closed day is queried once
    with store.transaction(write=False) as tx:
        recent = tx.fetchone(
            "SELECT delivery_id, pr_number, head_sha FROM dispatches WHERE repo = ?"
            " AND pr_number IS NOT NULL ORDER BY dispatched_at DESC LIMIT 1 OFFSET 20",
            (repo,),
        )
        selection = tx.scalar(
            "SELECT selection_id FROM selection_reports WHERE delivery_id = ? LIMIT 1",
            (recent["delivery_id"],) if recent else ("",),
        )
        red = tx.fetchone(
            "SELECT delivery_id, repo FROM test_failures ORDER BY received_at DESC LIMIT 1"
        )
        biggest = tx.fetchone(
            "SELECT delivery_id, repo FROM test_failures WHERE node_id = ? LIMIT 1",
            (reused_test_ids()[0],),
        )
        cursor = tx.scalar(
            "SELECT dispatched_at FROM dispatches WHERE repo = ? ORDER BY dispatched_at DESC"
            " LIMIT 1 OFFSET 2000",
            (repo,),
        )
    if recent is None or selection is None or red is None:  # pages below need such rows
        raise SystemExit("too little seeded data for the PR pages: raise --days or --events")
    pr, sha, delivery = int(recent["pr_number"]), str(recent["head_sha"]), recent["delivery_id"]
    test_id = reused_test_ids()[0]
    return [
        *_result_pages(repo, red, biggest or red, float(cursor or 0), test_id, pr, sha),
        *[
            ("overview", "/crcr", lambda tx, now: views.overview(tx, now, rollups)),
            ("overview JSON", "/api/crcr", lambda tx, now: views.overview(tx, now, rollups)),
            (
                "backend grid",
                f"/crcr/{repo}",
                lambda tx, now: grid.backend_page(tx, repo, now, None, None, rollups),
            ),
            (
                "backend, failures only",
                f"/crcr/{repo}?conclusion=failure",
                lambda tx, now: grid.backend_page(tx, repo, now, None, "failure", rollups),
            ),
            (
                "backend, nightly only",
                f"/crcr/{repo}?event=nightly",
                lambda tx, now: grid.backend_page(tx, repo, now, "nightly", None, rollups),
            ),
            ("PR", f"/crcr/pr/{pr}", lambda tx, now: grid.change_page(tx, now, pr=pr)),
            (
                "commit (prefix)",
                f"/crcr/commit/{sha[:12]}",
                lambda tx, now: grid.change_page(tx, now, sha=sha[:12]),
            ),
            (
                "delivery",
                f"/crcr/deliveries/{delivery}",
                lambda tx, now: grid.change_page(tx, now, delivery=delivery),
            ),
            (
                "metrics 14 d",
                "/crcr/metrics",
                lambda tx, now: metrics.metrics_page(tx, now, 14, rollups),
            ),
            (
                "metrics 30 d",
                "/crcr/metrics?days=30",
                lambda tx, now: metrics.metrics_page(tx, now, 30, rollups),
            ),
            (
                "L3 readiness",
                "/crcr/readiness",
                lambda tx, now: views.readiness_table(tx, now, rollups),
            ),
            ("selection report", f"/selection/{selection}", None),
        ],
    ]


def _result_pages(
    repo: str, red: dict[str, Any], big: dict[str, Any], cursor: float, test_id: str, pr: int,
    sha: str,
) -> list[tuple[str, str, Builder | None]]:  # fmt: skip
    """The pages of issue 13: run pages with failed tests, searches, a deep page, a test."""
    rollups = Rollups()

    def searching(query: str) -> Builder:
        search = parse_search(query)
        return lambda tx, now: grid.backend_page(tx, repo, now, None, None, rollups, search=search)

    searches = {"search PR": f"%23{pr}", "search SHA": sha[:10], "search test": "matmul0"}
    return [
        (
            "run page, 5 failed",
            f"/crcr/deliveries/{red['delivery_id']}?repo={quote(red['repo'], safe='')}",
            lambda tx, now: grid.change_page(tx, now, delivery=red["delivery_id"], repo=red["repo"]),
        ),
        (
            "run page, all backends",
            f"/crcr/deliveries/{big['delivery_id']}",
            lambda tx, now: grid.change_page(tx, now, delivery=big["delivery_id"]),
        ),
        *[
            (label, f"/crcr/{repo}?q={query}", searching(query.replace("%23", "#")))
            for label, query in searches.items()
        ],
        (
            "backend, infrastructure",
            f"/crcr/{repo}?kind=infrastructure",
            lambda tx, now: grid.backend_page(tx, repo, now, None, None, rollups, kind="infrastructure"),
        ),
        (
            "backend, page 50",
            f"/crcr/{repo}?before={cursor!r}",
            lambda tx, now: grid.backend_page(tx, repo, now, None, None, rollups, before=cursor),
        ),
        (
            "test history",
            f"/crcr/test?id={quote(test_id, safe='')}",
            lambda tx, now: one_test_page(tx, now, test_id, None),
        ),
    ]  # fmt: skip


def _time(client: httpx.Client, url: str, repeat: int) -> tuple[float, list[float]]:
    """(first request in ms, later requests in ms): the first may fill the day cache."""
    start = time.perf_counter()
    answer = client.get(url)
    first = (time.perf_counter() - start) * 1000
    if answer.status_code != 200:
        raise SystemExit(f"{url}: HTTP {answer.status_code}: {answer.text[:300]}")
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        client.get(url).raise_for_status()
        samples.append((time.perf_counter() - start) * 1000)
    return first, samples


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--events", type=int, default=300, help="upstream events per day")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp:
        directory = Path(tmp)
        if args.store == "postgres":
            from tests.support.postgres import PostgresServer, postgres_bin

            bindir = postgres_bin()
            if bindir is None:
                raise SystemExit("PostgreSQL is not installed: run `make sysdeps`")
            with PostgresServer(bindir) as server:
                return _run(args, directory, server.new_database())
        return _run(args, directory, f"sqlite:///{directory / 'relay.db'}")


def _run(args: argparse.Namespace, directory: Path, store_url: str) -> int:
    store = open_store(store_url)
    store.migrate()
    now = time.time()
    start = time.perf_counter()
    runs = seed(store, now, SeedShape(days=args.days, events_per_day=args.events))
    results = seed_results(store, now)
    size = (
        f"{(directory / 'relay.db').stat().st_size / 2**20:.0f} MiB SQLite"
        if store.dialect == "sqlite"
        else "PostgreSQL"
    )
    print(
        f"seeded {args.days} d x {len(BACKENDS)} backends x {args.events} events/day:"
        f" {runs} job runs, {results['test_status']} test histories,"
        f" {results['test_failures']} failed-test rows in {time.perf_counter() - start:.1f} s"
        f" ({size})"
    )
    with store.transaction() as tx:
        tx.execute("ANALYZE")
    pages = _pages(store)
    failed = _time_pages(directory, store_url, pages, args.repeat)
    scans = _print_plans(store, pages, now)
    _time_recording(store, now, args.repeat)
    store.close()
    verdict = "met by every page" if not failed else "MISSED: " + ", ".join(failed)
    print(f"\ntarget < {TARGET_MS:.0f} ms: {verdict}")
    print(f"full scans of big tables: {scans or 'none'}")
    return 1 if failed or scans else 0


def _time_pages(
    directory: Path, store_url: str, pages: list[tuple[str, str, Builder | None]], repeat: int
) -> list[str]:
    """Time every page over HTTP against a real relay; return the pages over the target."""
    # the relay the tests launch; info level: the cache warm-up is read from its log
    config = write_relay_config(directory, store_url=store_url)
    relay = RelayServer(config, log_level="info").start()
    url = relay.url
    failed = []
    try:
        with httpx.Client(timeout=30) as client:
            racing, _ = _time(client, url + "/crcr", 0)
            warm_log = _wait_for_warmup(relay.log_path)
            print(f"\nfirst /crcr right after start, racing the cache warm-up: {racing:.0f} ms")
            print(f"relay log: {warm_log}")
            print(f"\n{'page':<24} {'first ms':>9} {'median ms':>10} {'max ms':>8}  path")
            for label, path, _ in pages:
                first, samples = _time(client, url + path, repeat)
                median = statistics.median(samples)
                flag = "" if max(first, median) < TARGET_MS else "  <-- over target"
                failed += [label] if flag else []
                print(
                    f"{label:<24} {first:>9.1f} {median:>10.1f} {max(samples):>8.1f}  {path}{flag}"
                )
    finally:
        relay.stop()
    return failed


def _time_recording(store: Store, now: float, repeat: int) -> None:
    """What a completed callback with 2,000 test results (5 failed) adds to its transaction:
    the job's kind and details, 5 failed-test rows, 2,000 history updates."""
    repo = BACKENDS[0][0]
    ids = reused_test_ids()[:2000]
    report = RunReport.model_validate(
        {
            "steps": [{"job": "test (shard 1)", "name": "test", "kind": "test", "outcome": "failure"}],
            "tests": {
                "failures": [{"id": i, "message": "AssertionError: x" * 20} for i in ids[:5]],
                "results": {"passed": ids[5:]},
            },
        }
    )  # fmt: skip
    wall, cpu = [], []
    for n in range(repeat):
        key = JobKey(f"bench-record-{n}", repo, 10**9 + n, 1, "report")
        start, start_cpu = time.perf_counter(), time.process_time()
        with store.transaction() as tx:
            record_completed(tx, key, "failure", report, (5, 2000), (now + n, "f" * 40), 20, now)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    print(
        f"\nrecording a completed callback's 2,000 test results ({store.dialect}):"
        f" median {statistics.median(wall):.0f} ms wall, {statistics.median(cpu):.0f} ms CPU"
        f" (max {max(wall):.0f} ms wall) over {repeat} runs"
    )


def _wait_for_warmup(log: Path, timeout: float = 120.0) -> str:
    """The relay's log line saying the day cache is warm (the dashboard's start-up work)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if "dashboard cache warm for" in line:
                try:
                    return str(json.loads(line)["msg"])
                except (ValueError, KeyError):
                    return line.strip()
        time.sleep(0.1)
    return "(no warm-up line in the relay log)"


def _print_plans(
    store: Store, pages: list[tuple[str, str, Builder | None]], now: float
) -> list[str]:
    print("\nquery plans (EXPLAIN), once per distinct query:")
    seen: set[str] = set()
    scans: list[str] = []
    for label, _, build in pages:
        if build is None:
            continue
        for plan in page_plans(store, build, now):
            if plan.sql in seen:
                continue
            seen.add(plan.sql)
            print(f"\n[{label}] {' '.join(plan.sql.split())[:150]}")
            for line in plan.lines:
                print(f"    {line}")
            scans += [f"{label}: {line}" for line in plan.full_scans()]
    return scans


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
