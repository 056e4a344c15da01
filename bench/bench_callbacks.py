"""Callback throughput and latency with 50 concurrent reporters.

Starts the real relay (`spyre-ci relay serve`, uvicorn, loopback, no worker) on a
fresh store, seeds one dispatch record per downstream repository (10 repositories,
half L2, half L4 so that check-run jobs are enqueued too), and lets 50 reporter
threads (5 per repository, as matrix shards) each report JOBS jobs: in_progress
then completed, with the echoed client_payload of a real pull_request webhook, a
signed callback token and an OIDC token from a loopback issuer. Every answer must
be 200. Prints throughput and p50/p99 latency, for SQLite and (when Debian's
PostgreSQL is installed) PostgreSQL.

Usage: python bench/bench_callbacks.py [--jobs 20] [--reporters 50] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from relay.callback_token import CallbackTokenSigner, TokenBinding  # noqa: E402
from relay.callbacks.settings import CallbackSettings, token_secret  # noqa: E402
from relay.store import open_store  # noqa: E402
from tests.support.fake_oidc import FakeOidcIssuer  # noqa: E402
from tests.support.relay_server import TEST_SECRET, RelayServer, fixture_body  # noqa: E402

UPSTREAM = "Codertocat/Hello-World"
REPOS = [f"bench/repo{i}" for i in range(10)]


def write_config(directory: Path, store_url: str, oidc_url: str) -> Path:
    allowlist = directory / "allowlist.yml"
    allowlist.write_text(yaml.safe_dump({"L2": REPOS[:5], "L4": REPOS[5:]}))
    config = {
        "upstream_repo": UPSTREAM,
        "webhook_secrets": [TEST_SECRET],
        "store_url": store_url,
        "allowlist": {"source": str(allowlist)},
        "extra": {
            "callbacks": {
                "oidc_issuers": [{"kind": "github_actions", "issuer": oidc_url}],
                "hud_url": "http://127.0.0.1:9/unused",  # forwards are enqueued, not sent
                "rate_per_second": 10_000,
                "rate_burst": 10_000,
            }
        },
    }
    path = directory / "relay.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def seed_dispatches(store_url: str, payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One DISPATCHED record per repository; returns each repository's client_payload."""
    store = open_store(store_url)
    store.migrate()
    signer = CallbackTokenSigner(token_secret(CallbackSettings(), TEST_SECRET.encode()))
    now = time.time()
    head = payload["pull_request"]["head"]["sha"]
    client_payloads = {}
    with store.transaction() as tx:
        for i, repo in enumerate(REPOS):
            delivery = f"bench-delivery-{i}"
            issued = signer.issue(TokenBinding(delivery, repo, 2, head), now)
            tx.execute(
                "INSERT INTO dispatches (delivery_id, repo, level, event_type, pr_number, head_sha,"
                " labels, dispatched_at, callback_token_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    delivery,
                    repo,
                    "L2" if i < 5 else "L4",
                    "pull_request",
                    2,
                    head,
                    "[]",
                    now,
                    issued.token_id,
                ),
            )
            client_payloads[repo] = {
                "event_type": "pull_request",
                "delivery_id": delivery,
                "payload": payload,
                "callback_token": issued.token,
            }
    store.close()
    return client_payloads


def reporter(
    url: str,
    repo: str,
    shard: int,
    jobs: int,
    client_payload: dict[str, Any],
    bearer: str,
    latencies: list[float],
    failures: list[str],
) -> None:
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {bearer}"}) as http:
        for job in range(jobs):
            for status in ("in_progress", "completed"):
                workflow: dict[str, Any] = {
                    "schema_version": "1",
                    "status": status,
                    "name": "spyre-ci",
                    "run_id": 1000 + shard,
                    "run_attempt": 1,
                    "job_name": f"test ({shard}/{job})",
                    "check_run_id": shard * 1000 + job,
                }
                if status == "completed":
                    workflow["conclusion"] = "success"
                    workflow["test_results"] = {"passed": 9, "failed": 0, "skipped": 1, "total": 10}
                body = json.dumps({**client_payload, "workflow": workflow}).encode()
                start = time.perf_counter()
                answer = http.post(
                    f"{url}/github/callback",
                    content=body,
                    headers={"Content-Type": "application/json"},
                )
                latencies.append(time.perf_counter() - start)
                if answer.status_code != 200:
                    failures.append(f"{answer.status_code} {answer.text[:200]}")


def run(store_url: str, label: str, jobs: int, reporters: int) -> dict[str, float]:
    payload = json.loads(fixture_body("pull_request.opened"))
    with tempfile.TemporaryDirectory(prefix="bench-callbacks-") as tmp, FakeOidcIssuer() as oidc:
        config = write_config(Path(tmp), store_url, oidc.url)
        client_payloads = seed_dispatches(store_url, payload)
        tokens = {
            repo: oidc.token({"repository": repo, "sub": f"repo:{repo}"}, expires_in=3600)
            for repo in REPOS
        }
        with RelayServer(config) as relay:
            latencies: list[float] = []
            failures: list[str] = []
            threads = [
                threading.Thread(
                    target=reporter,
                    args=(
                        relay.url,
                        REPOS[i % len(REPOS)],
                        i,
                        jobs,
                        client_payloads[REPOS[i % len(REPOS)]],
                        tokens[REPOS[i % len(REPOS)]],
                        latencies,
                        failures,
                    ),
                )
                for i in range(reporters)
            ]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - start
    if failures:
        raise SystemExit(f"{label}: {len(failures)} callbacks failed, first: {failures[0]}")
    ordered = sorted(latencies)
    figures = {
        "callbacks": len(ordered),
        "seconds": elapsed,
        "per_second": len(ordered) / elapsed,
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[int(0.99 * (len(ordered) - 1))],
    }
    print(
        f"{label:<10} {figures['callbacks']:>6} callbacks in {elapsed:5.1f} s: "
        f"{figures['per_second']:6.0f}/s, p50 {figures['p50_ms']:6.1f} ms, p99 {figures['p99_ms']:6.1f} ms",
        flush=True,
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20, help="jobs per reporter (2 callbacks each)")
    parser.add_argument("--reporters", type=int, default=50)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    print(
        f"{args.reporters} concurrent reporters x {args.jobs} jobs x 2 callbacks, 10 repositories"
    )
    with tempfile.TemporaryDirectory(prefix="bench-callbacks-db-") as tmp:
        run(f"sqlite:///{Path(tmp) / 'relay.db'}", "SQLite", args.jobs, args.reporters)
    if args.no_postgres:
        return 0
    from tests.support.postgres import PostgresServer, postgres_bin

    bindir = postgres_bin()
    if bindir is None:
        print("PostgreSQL: skipped (not installed; make sysdeps)")
        return 0
    with PostgresServer(bindir) as server:
        run(server.new_database(), "PostgreSQL", args.jobs, args.reporters)
    return 0


if __name__ == "__main__":
    sys.exit(main())
