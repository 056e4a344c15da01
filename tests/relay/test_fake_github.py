"""The fake GitHub enforces what the real one documents (so passing against it means something)."""

from __future__ import annotations

import time

import httpx
import pytest

from relay.outbox import queue_stats
from tests.relay.conftest import dispatching_config
from tests.support.fake_github import FakeGitHub
from tests.support.relay_server import InProcessRelay, fixture_body, post_webhook

AUTH = {"Authorization": "Bearer test-token"}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"event_type": "x" * 100, "client_payload": {str(i): i for i in range(10)}}, 204),
        ({"event_type": "x" * 101, "client_payload": {}}, 422),
        ({"event_type": "push", "client_payload": {str(i): i for i in range(11)}}, 422),
        ({"event_type": "push", "client_payload": {"pad": "x" * (64 * 1024)}}, 422),
        ({"event_type": "push", "client_payload": "not an object"}, 422),
    ],
)
def test_repository_dispatch_limits(
    fake_github: FakeGitHub, body: dict[str, object], status: int
) -> None:
    response = httpx.post(f"{fake_github.url}/repos/o/r/dispatches", json=body, headers=AUTH)
    assert response.status_code == status


def test_requests_without_valid_credentials_are_refused(fake_github: FakeGitHub) -> None:
    body = {"event_type": "push", "client_payload": {}}
    assert httpx.post(f"{fake_github.url}/repos/o/r/dispatches", json=body).status_code == 401
    bad = {"Authorization": "Bearer nope"}
    assert (
        httpx.post(f"{fake_github.url}/repos/o/r/dispatches", json=body, headers=bad).status_code
        == 401
    )
    assert fake_github.dispatches == []


def test_primary_rate_limit_sends_the_worker_to_wait_for_the_reset(
    sqlite_url: str, allowlist: object
) -> None:
    with FakeGitHub(rate_limit=2) as fake:
        with InProcessRelay(dispatching_config(sqlite_url, fake), allowlist=allowlist) as relay:
            post_webhook(relay.url, "push", fixture_body("push"), delivery_id="rl")
            relay.worker().run_once(limit=10)
            with relay.state.store.transaction(write=False) as tx:
                waiting = tx.fetchone(
                    "SELECT next_attempt_at, last_error FROM outbox WHERE state = 'pending'"
                )
            assert queue_stats(relay.state.store, now=time.time()).pending == {"dispatch": 1}
        limited = [r for r in fake.requests if r.status == 403]
        assert len(limited) == 1 and len(fake.dispatches) == 2
    assert waiting is not None and "rate limited" in waiting["last_error"]
    # x-ratelimit-reset is an hour after the window opened: the job waits for it.
    assert waiting["next_attempt_at"] > time.time() + 3000
