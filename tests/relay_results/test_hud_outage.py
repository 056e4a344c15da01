"""A HUD outage delays results and loses none; the callbacks' answers never depend on it."""

from __future__ import annotations

from pathlib import Path

from relay.outbox import requeue_dead_letters
from tests.support.fake_github import FakeGitHub
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop

REPOS = ("acme/l2", "acme/l3", "acme/l4")
JOBS = ("test (1/3)", "test (2/3)", "test (3/3)")


def _loop_with_hud(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, hud: FakeHud
) -> ResultsLoop:
    return ResultsLoop(tmp_path, github, oidc, callbacks=hud.callback_settings())


def _report_while_the_hud_is_down(loop: ResultsLoop, hud: FakeHud) -> str:
    """Dispatch a PR, take the HUD down, report every job of it; return the delivery."""
    delivery = loop.webhook("pull_request.opened")
    loop.drain()
    hud.down = True
    _report_everything(loop, delivery)
    return delivery


def _report_everything(loop: ResultsLoop, delivery: str) -> None:
    for repo in REPOS:
        payload = loop.client_payload(delivery, repo)
        for job in JOBS:
            for status in ("in_progress", "completed"):
                answer = loop.callback(repo, payload, status=status, job_name=job)
                assert answer.status_code == 200, answer.text


def _expected_keys(delivery: str) -> set[str]:
    return {f"{repo}/{delivery}/spyre-ci/{job}/9001" for repo in REPOS for job in JOBS}


def test_rows_arrive_after_the_hud_recovers(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, hud: FakeHud
) -> None:
    with _loop_with_hud(tmp_path, github, oidc, hud) as loop:
        delivery = _report_while_the_hud_is_down(loop, hud)
        for _ in range(3):  # three rounds of failed attempts while the HUD is down
            loop.drain()
            loop.clock.advance(10)
        assert hud.rows == {} and hud.attempts >= 9
        assert loop.rows("SELECT COUNT(*) AS n FROM dead_letters") == [{"n": 0}]
        hud.down = False
        loop.clock.advance(120)
        loop.drain()
    assert set(hud.rows) == _expected_keys(delivery)
    assert all(
        r["untrusted"]["callback_payload"]["workflow"]["status"] == "completed"
        for r in hud.rows.values()
    )


def test_a_long_outage_dead_letters_and_requeue_delivers(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, hud: FakeHud
) -> None:
    with _loop_with_hud(tmp_path, github, oidc, hud) as loop:
        delivery = _report_while_the_hud_is_down(loop, hud)
        for _ in range(8):  # beyond max_attempts (5): every forward gives up
            loop.drain()
            loop.clock.advance(600)
        dead = loop.rows("SELECT kind FROM dead_letters")
        assert dead and {d["kind"] for d in dead} == {"hud"}
        hud.down = False
        assert requeue_dead_letters(loop.state.store, now=loop.clock.now()) == len(dead)
        loop.drain()
    assert set(hud.rows) == _expected_keys(delivery)
