"""Crash test: effectively once, end to end, with web and workers killed under load.

The relay runs as subprocesses: one web server and two workers, on SQLite and on
PostgreSQL. A sender posts a steady stream of webhooks (re-posting each until it is
acknowledged, as GitHub's redelivery would); the fake GitHub starts a downstream run for
every dispatch it accepts (`DownstreamRuns`: claim, then in_progress and completed
callbacks, every request retried until the relay answers); the results go on to a fake
HUD. Meanwhile the web server is SIGKILLed 3 times and a worker 3 times, never at the
same moment.

Dispatch is at least once: a worker killed between GitHub's 204 and its own "done" commit
sends the job again once its lease expires, and a GitHub answer slower than the client's
timeout is sent again too (the test forces a few of those, so duplicates always happen).
What the downstream and the dashboard see must still happen once: afterwards every
(delivery, target) was dispatched, every duplicate run was told so at its claim, and there
is exactly one result per (delivery, target, job) in the relay's store and on the HUD --
0 lost, 0 duplicated.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from relay.store import open_store
from tests.support.downstream_runs import JOB, DownstreamRuns
from tests.support.fake_github import FakeGitHub, Fault
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import (
    RelayServer,
    RelayWorker,
    fixture_body,
    signed_headers,
    write_relay_config,
)

TARGETS = ["org/alpha", "org/beta", "org/gamma"]
DELIVERIES = 60
SEND_INTERVAL = 0.05  # ~20 webhooks/s while the server is up
WEB_KILLS_AT = (8, 28, 48)  # acknowledged deliveries at which the web server is killed
WORKER_KILLS_AT = (16, 36, 56)  # ... at which a worker is killed (alternately)
FORCED_DUPLICATES = 3  # dispatches GitHub records but answers after the client gave up
SEND_TIMEOUT = 300.0  # s for the sender to have every delivery acknowledged, kills included
SETTLE_TIMEOUT = 180.0  # s for every run to finish and the outbox to drain afterwards
GITHUB_TIMEOUT = 4.0  # a slower answer is sent again: one more duplicate, handled
LEASE_SECONDS = 12.0  # must exceed GITHUB_TIMEOUT (the config requires so)


class Sender(threading.Thread):
    """Posts each delivery until the relay acknowledges it, as GitHub's redelivery would."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.acknowledged: list[str] = []
        self.failed_attempts = 0
        self.error: str | None = None

    def run(self) -> None:
        body = fixture_body("pull_request.synchronize")
        with httpx.Client(timeout=5) as client:
            for i in range(DELIVERIES):
                delivery_id = f"crash-{i:04d}"
                deadline = time.time() + 30
                while time.time() < deadline:
                    try:
                        response = client.post(
                            f"{self.url}/github/webhook",
                            content=body,
                            headers=signed_headers("pull_request", body, delivery_id=delivery_id),
                        )
                        if response.status_code == 202:
                            self.acknowledged.append(delivery_id)
                            break
                    except httpx.HTTPError:
                        pass
                    self.failed_attempts += 1
                    time.sleep(0.05)
                else:
                    self.error = f"{delivery_id} never acknowledged"
                    return
                time.sleep(SEND_INTERVAL)


def _open_work(store_url: str) -> int:
    """Outbox jobs not done yet, dead letters included (there should be none)."""
    store = open_store(store_url)
    try:
        with store.transaction(write=False) as tx:
            pending = tx.scalar("SELECT COUNT(*) FROM outbox WHERE state = 'pending'")
            dead = tx.scalar("SELECT COUNT(*) FROM dead_letters")
        return int(pending or 0) + int(dead or 0)
    finally:
        store.close()


def _pending(store_url: str) -> list[dict[str, object]]:
    """What is still open or dead, for the message of a run that did not settle."""
    columns = "kind, target, delivery_id, attempts, next_attempt_at, lease_owner, last_error"
    store = open_store(store_url)
    try:
        with store.transaction(write=False) as tx:
            pending = tx.fetchall(f"SELECT {columns} FROM outbox WHERE state = 'pending'")
            dead = tx.fetchall(f"SELECT {columns} FROM dead_letters")
        return [{"state": "pending", **row} for row in pending] + [
            {"state": "dead", **row} for row in dead
        ]
    finally:
        store.close()


def _results(store_url: str) -> list[dict[str, object]]:
    store = open_store(store_url)
    try:
        with store.transaction(write=False) as tx:
            return tx.fetchall("SELECT delivery_id, repo, job_name, run_id, status FROM job_runs")
    finally:
        store.close()


def _config(tmp_path: Path, store_url: str, github: FakeGitHub, oidc: str, hud: FakeHud) -> Path:
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n" + "".join(f"  - {t}\n" for t in TARGETS))
    return write_relay_config(
        tmp_path,
        store_url=store_url,
        allowlist={"source": str(allowlist)},
        github={
            "api_url": github.url,
            "token": "test-token",
            "min_write_interval_seconds": 0,
            "timeout_seconds": GITHUB_TIMEOUT,
        },
        worker={
            "concurrency": 2,
            "lease_seconds": LEASE_SECONDS,
            "poll_interval_seconds": 0.05,
            "backoff_base_seconds": 0.1,
            "backoff_max_seconds": 0.5,
        },
        extra={
            "callbacks": {
                "oidc_issuers": [{"kind": "github_actions", "issuer": oidc}],
                "rate_burst": 100_000,
                **hud.callback_settings(),
            }
        },
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_each_result_arrives_once_when_web_and_workers_are_killed(
    tmp_path: Path, dialect: str, request: pytest.FixtureRequest
) -> None:
    store_url = (
        f"sqlite:///{tmp_path / 'relay.db'}"
        if dialect == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    with FakeGitHub() as github, FakeOidcIssuer() as oidc, FakeHud(key="hud-key") as hud:
        # GitHub records these dispatches but answers after the relay gave up on them.
        github.inject(Fault.slow(GITHUB_TIMEOUT + 1, path="/dispatches", count=FORCED_DUPLICATES))
        config = _config(tmp_path, store_url, github, oidc.url, hud)
        server = RelayServer(config).start()
        workers = [RelayWorker(config).start(), RelayWorker(config).start()]
        sender = Sender(server.url)
        kills = Counter[str]()
        with DownstreamRuns(server.url, github, oidc) as downstream:
            try:
                sender.start()
                started = time.monotonic()
                while sender.is_alive() and time.monotonic() - started < SEND_TIMEOUT:
                    time.sleep(0.05)
                    acknowledged = len(sender.acknowledged)
                    if (
                        kills["web"] < len(WEB_KILLS_AT)
                        and acknowledged >= WEB_KILLS_AT[kills["web"]]
                    ):
                        server.kill()
                        server.start()
                        kills["web"] += 1
                    if (
                        kills["worker"] < len(WORKER_KILLS_AT)
                        and acknowledged >= WORKER_KILLS_AT[kills["worker"]]
                    ):
                        victim = kills["worker"] % len(workers)
                        workers[victim].kill()
                        workers[victim] = RelayWorker(config).start()
                        kills["worker"] += 1
                assert not sender.is_alive(), f"deliveries still sent after {SEND_TIMEOUT} s"
                assert sender.error is None, sender.error
                settle_started = time.monotonic()
                deadline = settle_started + SETTLE_TIMEOUT
                # The runs first, then the outbox: a run still reporting enqueues HUD jobs
                # with its last callbacks, so an outbox seen empty before every run ended
                # (wait_idle waits up to 1 s) says nothing about the outbox after it.
                while time.monotonic() < deadline and not (
                    downstream.wait_idle(timeout=1) and _open_work(store_url) == 0
                ):
                    time.sleep(0.2)
                settled = downstream.wait_idle(timeout=1)
                open_work = _open_work(store_url)
                # read now: once the processes are stopped, the jobs may have been done
                open_jobs = _pending(store_url) if open_work else []
                waited = time.monotonic() - settle_started
                # while the relay still answers late runs; unsettled, the logs say why
                runs = downstream.outcomes() if open_work == 0 and settled else []
            finally:
                for process in (server, *workers):
                    process.stop()
        logs = "\n".join(p.log()[-3000:] for p in (server, *workers))
        assert open_work == 0 and settled, (
            f"not settled after {waited:.1f} s (limit {SETTLE_TIMEOUT} s): {open_work} open"
            f" {open_jobs}, downstream {downstream.state()}:\n{logs}"
        )

    assert dict(kills) == {"web": 3, "worker": 3}
    assert len(sender.acknowledged) == DELIVERIES
    expected = {(d, t) for d in sender.acknowledged for t in TARGETS}
    dispatched = Counter(github.dispatched_pairs())
    assert set(dispatched) == expected  # none lost, none misrouted
    repeats = sum(n - 1 for n in dispatched.values())
    assert repeats >= FORCED_DUPLICATES  # the duplicates this test is about did happen
    for sent in github.dispatches:
        assert sent.client_payload["payload"] == json.loads(
            fixture_body("pull_request.synchronize")
        )

    # Every dispatch started a run; per (delivery, target) one claimed it, the others
    # were told "duplicate" at their claim and reported nothing.
    assert len(runs) == len(github.dispatches)
    assert Counter(r.claim for r in runs) == {"claimed": len(expected), "duplicate": repeats}
    owners = {(r.delivery_id, r.repo): r.run_id for r in runs if r.claim == "claimed"}
    assert set(owners) == expected
    assert all(r.reported == [200, 200] for r in runs if r.claim == "claimed"), runs

    # One result per (delivery, target, job): in the relay's store (what the dashboard
    # reads) and on the HUD.
    results = _results(store_url)
    per_job = Counter((r["delivery_id"], r["repo"], r["job_name"]) for r in results)
    assert set(per_job) == {(d, t, JOB) for d, t in expected} and set(per_job.values()) == {1}
    assert all(r["status"] == "completed" for r in results)
    assert {(r["delivery_id"], r["repo"]): r["run_id"] for r in results} == owners
    # A HUD key is repo/delivery/workflow/job/check_run_id (repo = owner/name).
    hud_jobs = Counter(tuple(key.split("/")[i] for i in (0, 1, 2, 4)) for key in hud.rows)
    assert len(hud.rows) == len(expected) and set(hud_jobs.values()) == {1}
    assert {
        r["untrusted"]["callback_payload"]["workflow"]["status"] for r in hud.rows.values()
    } == {"completed"}
    print(
        f"\n{dialect}: kills={dict(kills)} failed posts={sender.failed_attempts} "
        f"duplicate dispatches={repeats} runs={len(runs)} results={len(results)}"
    )
