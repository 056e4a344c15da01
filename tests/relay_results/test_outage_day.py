"""An hour-long outage of GitHub, then of the HUD and GitHub together, heals by itself.

Default retry policy (a day of capped exponential backoff), fake time: the worker runs
every minute of the outage, nothing is dead-lettered, and once the services answer again
every dispatch, HUD row, check run and commit status arrives, with no operator step
(no `dead-letters --requeue`).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop, fixture_payload

REPOS = ("acme/l2", "acme/l3", "acme/l4")  # L3 with its label, L4: check runs and statuses
DISPATCHED = ("acme/l1", *REPOS)  # L1 is dispatched to, its callbacks are ignored
LABEL = "ciflow/crcr/spyre"
HOUR = 3600.0
STEP = 60.0  # the worker runs once a minute of fake time


def _live_through(loop: ResultsLoop, seconds: float) -> None:
    for _ in range(int(seconds / STEP)):
        loop.clock.advance(STEP)
        loop.drain()


def _pending(loop: ResultsLoop) -> dict[str, int]:
    rows = loop.rows("SELECT kind, COUNT(*) AS n FROM outbox WHERE state = 'pending' GROUP BY kind")
    return {r["kind"]: int(r["n"]) for r in rows}


def _dead(loop: ResultsLoop) -> int:
    return int(loop.rows("SELECT COUNT(*) AS n FROM dead_letters")[0]["n"])


def test_an_hour_of_github_then_hud_outage_loses_nothing_and_needs_no_operator(
    tmp_path: Path,
    github: FakeGitHub,
    results_api: FakeResultsAPI,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    callbacks = hud.callback_settings(status_reporting="both")
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks, worker={}) as loop:
        # 1. GitHub is down for an hour: the webhook is acknowledged, its dispatches wait.
        github.down = True
        delivery = loop.webhook(
            "pull_request.opened", fixture_payload("pull_request.opened", labels=[LABEL])
        )
        _live_through(loop, HOUR)
        assert github.dispatches == [] and _dead(loop) == 0
        assert _pending(loop) == {"dispatch": len(DISPATCHED)}
        failed = [r for r in github.requests if r.path.endswith("/dispatches")]
        assert len(failed) >= 6 * len(DISPATCHED)  # retried all along, not given up

        github.down = False
        _live_through(loop, 15 * 60)  # the next retry comes within the backoff cap (10 min)
        assert sorted(d.repo for d in github.dispatches) == sorted(DISPATCHED)
        assert _pending(loop) == {}

        # 2. Then the HUD and GitHub are both down for an hour while every job reports.
        hud.down = github.down = True
        for repo in REPOS:
            payload = loop.client_payload(delivery, repo)
            for status in ("in_progress", "completed"):
                answer = loop.callback(repo, payload, status=status)
                assert answer.status_code == 200, answer.text  # never depends on the outage
        _live_through(loop, HOUR)
        assert hud.rows == {} and results_api.check_runs == [] and _dead(loop) == 0
        assert set(_pending(loop)) == {"hud", "check_run", "commit_status"}

        hud.down = github.down = False
        _live_through(loop, 15 * 60)
        assert _pending(loop) == {} and _dead(loop) == 0

    # 0 rows lost: every job's newest state reached the HUD, the PR and the commit.
    assert set(hud.rows) == {f"{repo}/{delivery}/spyre-ci/test (1/2)/9001" for repo in REPOS}
    assert {
        r["untrusted"]["callback_payload"]["workflow"]["status"] for r in hud.rows.values()
    } == {"completed"}
    reported = {"acme/l3", "acme/l4"}  # L2 gets no check run or status
    names = {c["name"] for c in results_api.check_runs if c["status"] == "completed"}
    assert names == {f"crcr/{repo}/spyre-ci/test (1/2)" for repo in reported}
    contexts = {s["context"] for s in results_api.statuses if s["state"] == "success"}
    assert contexts == {f"crcr/{repo}/spyre-ci/test (1/2)" for repo in reported}
