"""Crash test: SIGKILL the worker and the server repeatedly under a stream of webhooks.

Afterwards every acknowledged delivery has been dispatched to every target: none
lost, none sent to a target it was not meant for. Dispatch is at least once, so a
worker killed between GitHub's 204 and its own "done" commit sends that job again;
downstreams drop such repeats by (delivery_id, repository). The test bounds them.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.support.fake_github import FakeGitHub
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
WORKER_KILL_EVERY = 8  # acknowledged deliveries between two worker kills
SERVER_KILL_EVERY = 20  # ... between two server kills
SEND_TIMEOUT = 300.0  # s for the sender to have every delivery acknowledged, kills included
DRAIN_TIMEOUT = 120.0
# GitHub's answer may be slow on a loaded machine; a dispatch the fake recorded but
# answered after the client gave up is sent again, so the client waits long. The lease
# must exceed it (the config requires so), or a slow send would count as a lost lease.
GITHUB_TIMEOUT = 10.0
LEASE_SECONDS = 15.0


class Sender(threading.Thread):
    """Posts each delivery until the relay acknowledges it, as GitHub's redelivery would."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.acknowledged: list[str] = []
        self.duplicates_acknowledged = 0
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
                            self.duplicates_acknowledged += response.json()["duplicate"]
                            break
                    except httpx.HTTPError:
                        pass
                    self.failed_attempts += 1
                    time.sleep(0.05)
                else:
                    self.error = f"{delivery_id} never acknowledged"
                    return
                time.sleep(SEND_INTERVAL)


def _pending(config: Path) -> int:
    from relay.config import load_config
    from relay.outbox import queue_stats
    from relay.store import open_store

    store = open_store(load_config(config, {}).store_url)
    try:
        stats = queue_stats(store, now=time.time())
        return sum(stats.pending.values()) + sum(stats.leased.values()) + stats.dead_letters
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_no_delivery_is_lost_when_worker_and_server_are_killed(
    tmp_path: Path, dialect: str, request: pytest.FixtureRequest
) -> None:
    store_url = (
        f"sqlite:///{tmp_path / 'relay.db'}"
        if dialect == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n" + "".join(f"  - {t}\n" for t in TARGETS))
    with FakeGitHub() as fake:
        config = write_relay_config(
            tmp_path,
            store_url=store_url,
            allowlist={"source": str(allowlist)},
            github={
                "api_url": fake.url,
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
                "max_attempts": 50,
            },
        )
        server = RelayServer(config).start()
        workers = [RelayWorker(config).start(), RelayWorker(config).start()]
        sender = Sender(server.url)
        kills = Counter[str]()
        try:
            sender.start()
            started = time.monotonic()
            while sender.is_alive() and time.monotonic() - started < SEND_TIMEOUT:
                time.sleep(0.05)
                acknowledged = len(sender.acknowledged)
                if acknowledged >= (kills["worker"] + 1) * WORKER_KILL_EVERY:
                    victim = kills["worker"] % len(workers)
                    workers[victim].kill()
                    workers[victim] = RelayWorker(config).start()
                    kills["worker"] += 1
                if acknowledged >= (kills["server"] + 1) * SERVER_KILL_EVERY:
                    server.kill()
                    server.start()
                    kills["server"] += 1
            assert not sender.is_alive(), f"deliveries still sent after {SEND_TIMEOUT} s"
            assert sender.error is None, sender.error
            deadline = time.monotonic() + DRAIN_TIMEOUT
            while _pending(config) and time.monotonic() < deadline:
                time.sleep(0.2)
            remaining = _pending(config)
        finally:
            for process in (server, *workers):
                process.stop()
        logs = "\n".join(p.log()[-3000:] for p in workers)
        assert remaining == 0, f"{remaining} job(s) not done after {DRAIN_TIMEOUT} s:\n{logs}"

    assert kills["worker"] >= DELIVERIES // WORKER_KILL_EVERY - 1 and kills["server"] >= 2, kills
    assert len(sender.acknowledged) == DELIVERIES
    seen = Counter(fake.dispatched_pairs())
    expected = {(d, t) for d in sender.acknowledged for t in TARGETS}
    assert set(seen) == expected  # none lost, none misrouted
    repeats = sum(n - 1 for n in seen.values())
    # A repeat needs a kill between GitHub's 204 and the "done" commit (at most one per
    # in-flight job of a killed worker), a worker so slow that its lease expired, or a
    # GitHub answer so slow that the client gave up after the fake recorded the dispatch.
    worker_logs = [p.read_text() for p in tmp_path.glob("RelayWorker-*.log")]
    lost_leases = sum(log.count("lease was lost") for log in worker_logs)
    client_timeouts = sum(log.count("timed out after") for log in worker_logs)
    assert repeats <= kills["worker"] * 2 + lost_leases + client_timeouts, (
        repeats,
        kills,
        lost_leases,
        client_timeouts,
    )
    for sent in fake.dispatches:
        assert sent.client_payload["payload"] == json.loads(
            fixture_body("pull_request.synchronize")
        )
    print(
        f"\n{dialect}: kills={dict(kills)} failed posts={sender.failed_attempts} "
        f"redeliveries deduplicated={sender.duplicates_acknowledged} repeated dispatches={repeats}"
        f" lost leases={lost_leases} client timeouts={client_timeouts}"
    )
