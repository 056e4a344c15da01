"""GitHub App authentication and write pacing against the fake GitHub."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from relay.clock import SYSTEM_CLOCK, ManualClock
from relay.config import GitHubConfig
from relay.github.client import GitHubClient, WritePacer
from relay.github.errors import GitHubRetryableError
from relay.jobs import Deferred
from tests.relay.conftest import dispatching_config
from tests.support.fake_github import FakeGitHub
from tests.support.relay_server import InProcessRelay, fixture_body, post_webhook


def _app_config(fake: FakeGitHub, **fields: object) -> GitHubConfig:
    return GitHubConfig.model_validate(
        {
            "api_url": fake.url,
            "app_id": fake.app_id,
            "private_key": fake.private_key_pem,
            "min_write_interval_seconds": 0,
            **fields,
        }
    )


def _take_turn(pacer: WritePacer, key: str = "") -> None:
    """One write's turn, for a write that takes no time."""
    with pacer.turn(key):
        pass


def _dispatch(client: GitHubClient, repo: str) -> httpx.Response:
    return client.request(
        "POST",
        f"/repos/{repo}/dispatches",
        repo=repo,
        json={"event_type": "push", "client_payload": {"delivery_id": "x"}},
    )


def test_app_installation_tokens_are_per_repository_and_cached(fake_github: FakeGitHub) -> None:
    with GitHubClient(_app_config(fake_github), clock=ManualClock(time.time())) as client:
        for repo in ("org/a", "org/b", "org/a", "org/b"):
            assert _dispatch(client, repo).status_code == 204
    assert fake_github.tokens_issued == 2
    tokens = {d.repo: d.token for d in fake_github.dispatches}
    assert tokens["org/a"] != tokens["org/b"] and all(t.startswith("ghs_") for t in tokens.values())


def test_a_token_is_renewed_shortly_before_its_hour_is_up() -> None:
    clock = ManualClock(time.time())
    with (
        FakeGitHub(now=clock.now) as fake_github,
        GitHubClient(_app_config(fake_github), clock=clock) as client,
    ):
        _dispatch(client, "org/a")
        clock.advance(3600 - 400)  # still > 5 minutes left: cached
        _dispatch(client, "org/a")
        assert fake_github.tokens_issued == 1
        clock.advance(200)  # < 5 minutes left: renewed before GitHub would refuse it
        _dispatch(client, "org/a")
        assert fake_github.tokens_issued == 2


def test_an_app_key_github_does_not_know_is_refused() -> None:
    with FakeGitHub(app_id="1") as fake:
        config = GitHubConfig.model_validate(
            {
                "api_url": fake.url,
                "app_id": "2",
                "private_key": fake.private_key_pem,
                "min_write_interval_seconds": 0,
            }
        )
        with GitHubClient(config) as client, pytest.raises(GitHubRetryableError, match="401"):
            _dispatch(client, "org/a")


def test_the_worker_dispatches_with_app_auth(
    sqlite_url: str, allowlist: object, fake_github: FakeGitHub
) -> None:
    config = dispatching_config(
        sqlite_url,
        fake_github,
        github={
            "token": None,
            "app_id": fake_github.app_id,
            "private_key": fake_github.private_key_pem,
        },
    )
    with InProcessRelay(config, allowlist=allowlist) as relay:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="app")
        assert relay.worker().run_once(limit=10) == 3
    assert len(fake_github.dispatches) == 3 and fake_github.tokens_issued == 3


def test_pacer_spaces_writes_and_caps_them_per_minute() -> None:
    clock = ManualClock(0.0)
    pacer = WritePacer(min_interval=1.0, per_minute=3, clock=clock)
    times = []
    for _ in range(5):
        _take_turn(pacer)
        times.append(clock.now())
    assert times == [0.0, 1.0, 2.0, 60.0, 61.0]


def test_a_turn_further_away_than_a_lease_allows_defers_the_job_to_that_turn() -> None:
    """A job holds its lease while it waits: past the lease another worker would send it
    too. So the pacer gives the job back, to be run when its turn comes (Deferred: not an
    attempt, not a failure)."""
    clock = ManualClock(0.0)
    pacer = WritePacer(min_interval=1.0, per_minute=2, clock=clock, max_wait=4.0)
    _take_turn(pacer)
    _take_turn(pacer)  # 1 s later: within max_wait
    with pytest.raises(Deferred) as refused:
        _take_turn(pacer)  # the per-minute cap: the next turn is at 60 s
    assert refused.value.seconds == 59.0
    assert "59.0 s away, more than a job can wait within its lease (4.0 s)" in str(refused.value)
    assert clock.now() == 1.0  # nothing waited
    clock.advance(59.0)
    _take_turn(pacer)  # the retry, at its turn


def test_a_write_turn_held_too_long_by_another_thread_defers_the_job() -> None:
    pacer = WritePacer(min_interval=0.0, per_minute=80, clock=SYSTEM_CLOCK, max_wait=0.1)
    holding, release = threading.Event(), threading.Event()

    def slow_write() -> None:
        with pacer.turn("org-a"):
            holding.set()
            release.wait(5)

    writer = threading.Thread(target=slow_write)
    writer.start()
    try:
        assert holding.wait(5)
        with pytest.raises(Deferred):
            _take_turn(pacer, "org-a")
    finally:
        release.set()
        writer.join(timeout=5)
    _take_turn(pacer, "org-a")  # the lock was released by the refused turn too


def test_pacer_spaces_a_write_from_the_end_of_a_slow_one() -> None:
    # GitHub sees a request when it arrives, not when we sent it: a slow write
    # must not let the next one land closer than the interval.
    clock = ManualClock(0.0)
    pacer = WritePacer(min_interval=1.0, per_minute=80, clock=clock)
    with pacer.turn("org-a"):
        clock.advance(5.0)  # the request takes 5 s
    _take_turn(pacer, "org-a")
    assert clock.now() == 6.0


def test_writes_for_one_account_are_serial() -> None:
    pacer = WritePacer(min_interval=0.0, per_minute=80, clock=SYSTEM_CLOCK)
    inside: list[int] = []
    overlap: list[int] = []

    def write() -> None:
        with pacer.turn("org-a"):
            inside.append(1)
            overlap.append(len(inside))
            time.sleep(0.02)
            inside.pop()

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=5)
    assert overlap == [1, 1, 1, 1]


def test_paced_writes_never_trip_the_secondary_limit() -> None:
    with FakeGitHub(min_write_interval=0.2) as fake:
        config = GitHubConfig.model_validate(
            {"api_url": fake.url, "token": "test-token", "min_write_interval_seconds": 0.25}
        )
        with GitHubClient(config) as client:
            for i in range(4):
                assert _dispatch(client, f"org/r{i}").status_code == 204
        assert [r.status for r in fake.requests] == [204] * 4


def test_pacer_keeps_accounts_apart() -> None:
    clock = ManualClock(0.0)
    pacer = WritePacer(min_interval=1.0, per_minute=80, clock=clock)
    _take_turn(pacer, "org-a")
    _take_turn(pacer, "org-b")  # another installation: no wait
    assert clock.now() == 0.0
    _take_turn(pacer, "org-a")
    assert clock.now() == 1.0
