"""Sweepers: stuck jobs time out everywhere, failed webhooks are redelivered, missed tags dispatched."""

from __future__ import annotations

import json
from pathlib import Path

from relay.callbacks.settings import callback_settings
from relay.sweepers import poll_tags, sweep_failed_deliveries, sweep_timeouts
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import fixture_body, signed_headers
from tests.support.results_loop import ResultsLoop

HOUR = 3600.0


def test_jobs_in_progress_past_the_timeout_become_timed_out_everywhere(
    tmp_path: Path,
    github: FakeGitHub,
    results_api: FakeResultsAPI,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    callbacks = hud.callback_settings(in_progress_timeout_seconds=6 * HOUR)
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as loop:
        settings = callback_settings(loop.config.extra)
        delivery = loop.webhook("pull_request.opened")
        loop.drain()
        stuck = loop.client_payload(delivery, "acme/l4")
        assert (
            loop.callback("acme/l4", stuck, status="in_progress", job_name="stuck").status_code
            == 200
        )
        loop.clock.advance(2 * HOUR)
        assert (
            loop.callback("acme/l4", stuck, status="in_progress", job_name="young").status_code
            == 200
        )
        loop.drain()
        loop.clock.advance(4 * HOUR + 1)
        assert sweep_timeouts(loop.state, settings) == 1
        assert sweep_timeouts(loop.state, settings) == 0  # idempotent
        loop.drain()
        jobs = {j["job_name"]: j for j in loop.rows("SELECT * FROM job_runs")}
        late = loop.callback("acme/l4", stuck, status="completed", job_name="stuck")
    assert (jobs["stuck"]["status"], jobs["stuck"]["conclusion"]) == ("completed", "timed_out")
    assert jobs["stuck"]["execution_time"] == 6 * HOUR + 1
    assert jobs["young"]["status"] == "in_progress"
    assert late.status_code == 409 and "sweeper" in late.json()["error"]
    stuck_key = f"acme/l4/{delivery}/spyre-ci/stuck/9001"
    workflow = hud.rows[stuck_key]["untrusted"]["callback_payload"]["workflow"]
    assert (workflow["status"], workflow["conclusion"]) == ("completed", "timed_out")
    runs = results_api.check_runs_named("crcr/acme/l4/spyre-ci/stuck")
    assert [(r["status"], r.get("conclusion")) for r in runs] == [
        ("in_progress", None),
        ("completed", "timed_out"),
    ]


def _app_config(github: FakeGitHub) -> dict[str, str]:
    return {"app_id": github.app_id, "private_key": github.private_key_pem}


def test_failed_webhook_deliveries_are_redelivered_once(
    tmp_path: Path, github: FakeGitHub, results_api: FakeResultsAPI, oidc: FakeOidcIssuer
) -> None:
    with ResultsLoop(tmp_path, github, oidc, github_config=_app_config(github)) as loop:
        settings = callback_settings(loop.config.extra)
        now = loop.clock.now()
        stamp = lambda ago: __import__("time").strftime(  # noqa: E731
            "%Y-%m-%dT%H:%M:%SZ", __import__("time").gmtime(now - ago)
        )
        body = fixture_body("pull_request.opened")
        results_api.hook_deliveries = [
            # guid "lost": failed twice, never succeeded -> redeliver the newest attempt
            {
                "id": 3,
                "guid": "lost",
                "delivered_at": stamp(60),
                "status_code": 502,
                "event": "pull_request",
            },
            {
                "id": 2,
                "guid": "lost",
                "delivered_at": stamp(120),
                "status_code": 0,
                "event": "pull_request",
            },
            # guid "fine": failed once, then a redelivery succeeded -> nothing to do
            {
                "id": 5,
                "guid": "fine",
                "delivered_at": stamp(30),
                "status_code": 202,
                "event": "push",
            },
            {
                "id": 4,
                "guid": "fine",
                "delivered_at": stamp(90),
                "status_code": 500,
                "event": "push",
            },
            # too old for GitHub's redelivery window
            {
                "id": 1,
                "guid": "ancient",
                "delivered_at": stamp(4 * 86400),
                "status_code": 500,
                "event": "push",
            },
        ]

        def redeliver(delivery: dict) -> None:  # GitHub sends the webhook again
            headers = signed_headers("pull_request", body, delivery_id=delivery["guid"])
            loop.http.post(f"{loop.url}/github/webhook", content=body, headers=headers)

        results_api.on_redeliver = redeliver
        assert sweep_failed_deliveries(loop.state, settings) == 1
        assert sweep_failed_deliveries(loop.state, settings) == 0  # already asked
        loop.drain()
        assert results_api.redeliveries == ["3"]
        stored = loop.rows("SELECT delivery_id FROM deliveries")
        assert stored == [{"delivery_id": "lost"}]
        assert sweep_failed_deliveries(loop.state, settings) == 0  # now stored


def test_tags_github_sent_no_event_for_are_dispatched_once(
    tmp_path: Path, github: FakeGitHub, results_api: FakeResultsAPI, oidc: FakeOidcIssuer
) -> None:
    def tag(name: str, sha: str) -> dict:
        return {"name": name, "commit": {"sha": sha}}

    results_api.tags = [tag("v2.13.0", "1" * 40)]
    with ResultsLoop(tmp_path, github, oidc, github_config=_app_config(github)) as loop:
        assert poll_tags(loop.state) == []  # the first poll only records what exists
        # A tag push GitHub did tell us about:
        push = json.loads(fixture_body("push"))
        push["ref"], push["after"] = "refs/tags/v2.14.0-rc1", "2" * 40
        loop.webhook("push", push)
        # Four tags pushed at once: no events at all. One more only as a release.
        results_api.tags += [tag("v2.14.0-rc1", "2" * 40)] + [
            tag(f"v2.14.0-rc{i}", str(i) * 40) for i in (2, 3, 4)
        ]
        results_api.releases = [{"tag_name": "v2.14.0", "target_sha": "9" * 40}]
        missed = poll_tags(loop.state)
        assert poll_tags(loop.state) == []  # each tag once
        loop.drain()
    assert missed == ["v2.14.0", "v2.14.0-rc2", "v2.14.0-rc3", "v2.14.0-rc4"]
    pushed = [
        d.client_payload["payload"]["ref"]
        for d in github.dispatches
        if d.repo == "acme/l2" and d.event_type == "push"
    ]
    assert sorted(pushed) == sorted(["refs/tags/v2.14.0-rc1"] + [f"refs/tags/{t}" for t in missed])


def test_a_run_that_ended_without_reporting_is_completed_failure_at_once(
    tmp_path: Path,
    github: FakeGitHub,
    results_api: FakeResultsAPI,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    from relay.sweepers import complete_abandoned_run

    callbacks = hud.callback_settings()
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as loop:
        delivery = loop.webhook("pull_request.opened")
        other = loop.webhook("pull_request.opened")  # another delivery, another run
        loop.drain()
        payload = loop.client_payload(delivery, "acme/l4")
        for run_id, job, sent in [
            (100, "stuck", payload),
            (200, "other run", loop.client_payload(other, "acme/l4")),
        ]:
            answer = loop.callback(
                "acme/l4", sent, status="in_progress", run_id=run_id, job_name=job
            )
            assert answer.status_code == 200, answer.text
        loop.drain()
        loop.clock.advance(60)
        reason = "the local run process exited with status 1 without reporting completion"
        assert complete_abandoned_run(loop.state, delivery, "acme/l4", 100, reason) == 1
        assert complete_abandoned_run(loop.state, delivery, "acme/l4", 100, reason) == 0
        loop.drain()
        jobs = {j["job_name"]: j for j in loop.rows("SELECT * FROM job_runs")}
        late = loop.callback("acme/l4", payload, status="completed", run_id=100, job_name="stuck")
    stuck = jobs["stuck"]
    assert (stuck["status"], stuck["conclusion"]) == ("completed", "failure")
    assert stuck["execution_time"] == 60
    assert json.loads(stuck["last_payload"])["relay_completion_reason"] == reason
    assert jobs["other run"]["status"] == "in_progress"
    assert late.status_code == 409
    [key] = [k for k in hud.rows if "/stuck/" in k]
    workflow = hud.rows[key]["untrusted"]["callback_payload"]["workflow"]
    assert (workflow["status"], workflow["conclusion"]) == ("completed", "failure")
    runs = results_api.check_runs_named("crcr/acme/l4/spyre-ci/stuck")
    assert [(r["status"], r.get("conclusion")) for r in runs] == [
        ("in_progress", None),
        ("completed", "failure"),
    ]
    assert reason in runs[-1]["output"]["summary"]
