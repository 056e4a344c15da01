"""Duplicate and replayed callbacks: clients may retry safely, replays change nothing."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


def test_identical_repeats_get_the_same_answer_and_no_second_effect(
    tmp_path: Path,
    github: FakeGitHub,
    results_api: FakeResultsAPI,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    callbacks = hud.callback_settings()
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as loop:
        payload = loop.open_pr("acme/l4")
        loop.clock.advance(40)
        first = loop.callback("acme/l4", payload, status="in_progress")
        loop.clock.advance(5)
        retried = loop.callback("acme/l4", payload, status="in_progress")
        assert first.status_code == retried.status_code == 200
        assert first.json() == retried.json()
        loop.drain()
        loop.clock.advance(100)
        done = loop.callback("acme/l4", payload, status="completed")
        done_again = loop.callback("acme/l4", payload, status="completed")
        # A late retry of the in_progress callback is still the same callback.
        late = loop.callback("acme/l4", payload, status="in_progress")
        assert done.json() == done_again.json() and late.json() == first.json()
        loop.drain()
        jobs = loop.rows("SELECT * FROM job_runs")
    assert len(jobs) == 1 and jobs[0]["execution_time"] == 105  # from the first in_progress
    assert [r["status"] for r in results_api.check_runs] == ["in_progress", "completed"]
    assert [p["untrusted"]["callback_payload"]["workflow"]["status"] for p in hud.posts] == [
        "in_progress",
        "completed",
    ]


def test_replayed_callback_with_other_content_is_rejected(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    with ResultsLoop(tmp_path, github, oidc) as loop:
        payload = loop.open_pr("acme/l2")
        assert loop.callback("acme/l2", payload, status="in_progress").status_code == 200
        assert (
            loop.callback("acme/l2", payload, status="completed", conclusion="failure").status_code
            == 200
        )
        replay = loop.callback("acme/l2", payload, status="completed", conclusion="success")
        assert replay.status_code == 409
        jobs = loop.rows("SELECT conclusion FROM job_runs")
    assert jobs == [{"conclusion": "failure"}]


def test_every_attempt_of_one_dispatch_carries_the_same_token_id(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    """At-least-once dispatch: a run started by an attempt whose answer was lost still reports."""
    from relay.callbacks.tokens import payload_extension
    from relay.dispatch.dispatcher import DispatchRequest
    from tests.support.results_loop import fixture_payload

    with ResultsLoop(tmp_path, github, oidc) as loop:
        delivery = loop.webhook("pull_request.opened")
        loop.drain()
        request = DispatchRequest(
            delivery, "acme/l2", "pull_request", fixture_payload("pull_request.opened")
        )
        earlier = payload_extension(loop.state, request)
        loop.clock.advance(30)
        later = payload_extension(loop.state, request)
        assert earlier.callback_token_id == later.callback_token_id
        assert earlier.extra["callback_token"] != later.extra["callback_token"]  # new expiry
        payload = {**loop.client_payload(delivery, "acme/l2"), **earlier.extra}
        assert loop.callback("acme/l2", payload).status_code == 200
