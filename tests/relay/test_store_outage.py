"""A PostgreSQL store that stops answering, or stops: the relay answers 503 in bounded time.

Each test starts its own PostgreSQL server (tests/support/postgres.py), so freezing or
stopping it never touches the session's server. Every request carries a client
timeout, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from relay.allowlist_source import StaticAllowlist
from tests.relay.conftest import make_config
from tests.support.postgres import PostgresServer, postgres_bin
from tests.support.relay_server import InProcessRelay

pytestmark = pytest.mark.postgres

CLIENT_TIMEOUT = 90.0  # never reached when the relay works; the suite cannot hang
BOUND = 30.0  # generous: the relay answers after about twice store_timeout_seconds
PAGES = ["/healthz", "/api/crcr", "/crcr", "/crcr/org/stable", "/api/crcr/pr/1", "/crcr/pr/1"]


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed")
    server = PostgresServer(bindir).start()
    try:
        yield server
    finally:
        server.thaw()
        server.stop()


@pytest.fixture
def pg_relay(own_postgres: PostgresServer, allowlist: StaticAllowlist) -> Iterator[InProcessRelay]:
    config = make_config(
        own_postgres.new_database(),
        store_timeout_seconds=2,
        extra={"dashboard": {"warm_cache": False}},
    )
    with InProcessRelay(config, allowlist=allowlist) as relay:
        yield relay


def _warm(relay: InProcessRelay) -> None:
    """Fill the connection pool, as a relay that has been serving would have."""
    with httpx.Client(base_url=relay.url, timeout=CLIENT_TIMEOUT) as client:
        for _ in range(3):
            for page in PAGES:
                assert client.get(page).status_code in (200, 404), page


def _timed_get(relay: InProcessRelay, path: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.get(relay.url + path, timeout=CLIENT_TIMEOUT)
    return response, time.monotonic() - started


def test_frozen_postgres_answers_503_in_bounded_time(
    own_postgres: PostgresServer, pg_relay: InProcessRelay
) -> None:
    _warm(pg_relay)
    own_postgres.freeze()
    try:
        for path in ["/healthz", "/api/crcr", "/crcr"]:
            response, elapsed = _timed_get(pg_relay, path)
            assert response.status_code == 503, (path, response.text)
            assert elapsed < BOUND, (path, elapsed)
    finally:
        own_postgres.thaw()
    # Once the server answers again, so does the relay (the cut connections were dropped).
    with httpx.Client(base_url=pg_relay.url, timeout=CLIENT_TIMEOUT) as client:
        assert client.get("/healthz").json() == {"status": "ok", "store": "postgres"}
        assert client.get("/api/crcr").status_code == 200


def test_stopped_postgres_gives_dashboard_503_not_500(
    own_postgres: PostgresServer, pg_relay: InProcessRelay
) -> None:
    _warm(pg_relay)
    own_postgres.halt()
    with httpx.Client(base_url=pg_relay.url, timeout=CLIENT_TIMEOUT) as client:
        for path in ["/crcr", "/crcr/org/stable", "/crcr/pr/1", "/crcr/readiness"]:
            response = client.get(path)
            assert response.status_code == 503, (path, response.text)
            assert response.headers["content-type"].startswith("text/html"), path
            assert "Store unavailable" in response.text
            assert int(response.headers["retry-after"]) > 0
        for path in ["/api/crcr", "/api/crcr/org/stable", "/api/crcr/pr/1", "/api/crcr/metrics"]:
            response = client.get(path)
            assert response.status_code == 503, (path, response.text)
            assert response.json()["error"] == "store unavailable"
            assert int(response.headers["retry-after"]) > 0
            # Outside clients learn nothing about the database's address.
            assert "127.0.0.1" not in response.text and "port" not in response.text
        metrics = client.get("/metrics")
        assert metrics.status_code == 200
        assert "relay_store_up 0.0" in metrics.text
        assert 'state="pending"' not in metrics.text
        health = client.get("/healthz")
        assert health.status_code == 503
        assert "127.0.0.1" not in health.text and "port" not in health.text


def test_worker_logs_a_store_outage_once_not_per_attempt(
    own_postgres: PostgresServer, allowlist: StaticAllowlist, caplog: pytest.LogCaptureFixture
) -> None:
    import threading

    from relay.state import build_state
    from relay.worker import Worker

    config = make_config(
        own_postgres.new_database(),
        store_timeout_seconds=2,
        worker={"concurrency": 4, "poll_interval_seconds": 0.05},
    )
    state = build_state(config, allowlist=allowlist)
    own_postgres.halt()
    stop = threading.Event()
    worker = threading.Thread(target=Worker(state).run, args=(stop,), daemon=True)
    with caplog.at_level("INFO"):
        worker.start()
        # Four threads polling every 0.05 s used to log about 80 lines a second.
        time.sleep(3)
        stop.set()
        worker.join(timeout=60)
    state.close()
    assert not worker.is_alive()
    lines = [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("relay store unavailable: ")
    assert "connection" in lines[0]  # the reason is in the log
