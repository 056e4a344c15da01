"""The full loop on loopback: webhook -> dispatch -> in_progress -> completed -> HUD -> check run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop, fixture_payload

CHECK = "crcr/{repo}/spyre-ci/test (1/2)"


def _run_job(loop: ResultsLoop, delivery: str, repo: str, queue: float, execution: float) -> None:
    payload = loop.client_payload(delivery, repo)
    loop.clock.advance(queue)
    started = loop.callback(repo, payload, status="in_progress")
    assert started.status_code == 200, started.text
    loop.drain()
    loop.clock.advance(execution)
    done = loop.callback(repo, payload, status="completed")
    assert done.status_code == 200, done.text
    loop.drain()


@pytest.mark.parametrize(
    "store_kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_every_level_through_the_whole_loop(
    request: pytest.FixtureRequest,
    store_kind: str,
    tmp_path: Path,
    github: FakeGitHub,
    results_api: FakeResultsAPI,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    store_url = request.getfixturevalue("postgres_url") if store_kind == "postgres" else None
    callbacks = hud.callback_settings()
    pr = fixture_payload("pull_request.opened", labels=["ciflow/crcr/spyre"])
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks, store_url=store_url) as loop:
        delivery = loop.webhook("pull_request.opened", pr)
        loop.drain()
        assert {d.repo for d in github.dispatches} == {"acme/l1", "acme/l2", "acme/l3", "acme/l4"}
        for repo in ("acme/l1", "acme/l2", "acme/l3", "acme/l4"):
            _run_job(loop, delivery, repo, queue=30, execution=600)
        jobs = loop.rows("SELECT * FROM job_runs ORDER BY repo")

    # L1 callbacks are acknowledged and ignored: no row, no HUD record, no check run.
    assert [j["repo"] for j in jobs] == ["acme/l2", "acme/l3", "acme/l4"]
    for job in jobs:
        assert (job["status"], job["conclusion"], job["tests_total"]) == (
            "completed",
            "success",
            100,
        )
        assert job["queue_time"] >= 30 and job["execution_time"] == pytest.approx(600)
        assert job["head_sha"] == pr["pull_request"]["head"]["sha"] and job["pr_number"] == 2
    # Every L2+ result reached the HUD, with CRCR's trusted/untrusted body, latest state.
    assert {k.split("/")[1] for k in hud.rows} == {"l2", "l3", "l4"}
    for key, row in hud.rows.items():
        assert row["trusted"]["verified_repo"] == "/".join(key.split("/")[:2])
        assert row["trusted"]["ci_metrics"]["execution_time"] == pytest.approx(600)
        callback_payload = row["untrusted"]["callback_payload"]
        assert callback_payload["workflow"]["status"] == "completed"
        # The token is a credential and stays here; the echoed webhook is slimmed.
        assert "callback_token" not in callback_payload and callback_payload["payload_slimmed"]
        assert callback_payload["payload"]["pull_request"]["number"] == 2
        assert "body" not in callback_payload["payload"]["pull_request"]
    assert {r["trusted"]["downstream_repo_level"] for r in hud.rows.values()} == {"L2", "L3", "L4"}
    # Check runs: L3 (labelled) and L4, one per state change, on the PR head, never for L2.
    for repo in ("acme/l3", "acme/l4"):
        runs = results_api.check_runs_named(CHECK.format(repo=repo))
        assert [r["status"] for r in runs] == ["in_progress", "completed"]
        assert runs[-1]["conclusion"] == "success" and runs[-1]["external_id"] == "100:2"
        assert runs[-1]["head_sha"] == pr["pull_request"]["head"]["sha"]
        assert runs[-1]["details_url"].startswith(f"http://relay.test/crcr/deliveries/{delivery}")
    assert not results_api.check_runs_named(CHECK.format(repo="acme/l2"))


def test_relay_is_itself_a_hud_for_another_relay(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    hud_side = ResultsLoop(tmp_path, github, oidc, callbacks={"hud_api_keys": ["shared-key"]})
    with hud_side:
        callbacks = {"hud_url": hud_side.url, "hud_key": "shared-key"}
        with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as loop:
            delivery = loop.webhook("pull_request.opened")
            loop.drain()
            _run_job(loop, delivery, "acme/l2", queue=5, execution=50)
        rows = hud_side.rows("SELECT * FROM hud_rows")
    assert [r["key"] for r in rows] == [f"acme/l2/{delivery}/spyre-ci/test (1/2)/9001"]
    body = json.loads(rows[0]["body"])
    assert body["untrusted"]["callback_payload"]["workflow"]["conclusion"] == "success"
    assert body["trusted"]["ci_metrics"]["execution_time"] == pytest.approx(50)


def test_selection_report_is_stored_for_the_dashboard(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    selection = {"summary": {"selected": 120, "of": 4000}, "html": "<h1>report</h1>"}
    with ResultsLoop(tmp_path, github, oidc) as loop:
        delivery = loop.webhook("pull_request.opened")
        loop.drain()
        payload = loop.client_payload(delivery, "acme/l2")
        assert loop.callback("acme/l2", payload, status="in_progress").status_code == 200
        done = loop.callback("acme/l2", payload, status="completed", extra={"selection": selection})
        assert done.status_code == 200, done.text
        job = loop.rows("SELECT selection_id FROM job_runs")[0]
        report = loop.rows("SELECT * FROM selection_reports")[0]
    assert job["selection_id"] == report["selection_id"] == f"{delivery}:acme/l2:100:1"
    assert json.loads(report["summary"]) == {"selected": 120, "of": 4000}
    assert (report["html"], report["repo"], report["delivery_id"]) == (
        "<h1>report</h1>",
        "acme/l2",
        delivery,
    )


def test_nightly_callback_is_recorded_without_a_dispatch(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, hud: FakeHud
) -> None:
    sha = "a" * 40
    nightly = {"event_type": "nightly", "delivery_id": sha, "payload": {}}
    with ResultsLoop(tmp_path, github, oidc, callbacks=hud.callback_settings()) as loop:
        answer = loop.callback("acme/l2", nightly, status="completed", conclusion="failure")
        assert answer.status_code == 200, answer.text
        again = loop.callback("acme/l2", nightly, status="completed", conclusion="failure")
        assert again.status_code == 200
        loop.drain()
        jobs = loop.rows("SELECT * FROM job_runs")
    assert [(j["delivery_id"], j["event_type"], j["conclusion"]) for j in jobs] == [
        (sha, "nightly", "failure")
    ]
    assert len(hud.posts) == 1  # an identical repeat is not forwarded twice


def test_a_configured_target_reports_at_its_configured_level(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    """Targets outside the allowlist (the local target, for one) report like repositories."""
    target = {"name": "acme/configured", "connection": "github", "level": "L2"}
    with ResultsLoop(tmp_path, github, oidc, targets=[target]) as loop:
        delivery = loop.webhook("pull_request.opened")
        loop.drain()
        _run_job(loop, delivery, "acme/configured", queue=1, execution=2)
        jobs = loop.rows("SELECT repo, status FROM job_runs")
    assert jobs == [{"repo": "acme/configured", "status": "completed"}]


def test_a_buildkite_pipeline_reports_for_its_mapped_repository(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    with FakeOidcIssuer() as buildkite:
        pipeline = {
            "repository": "acme/l2",
            "claims": {"organization_id": "o-1", "pipeline_id": "p-1"},
        }
        issuers = [
            {"kind": "github_actions", "issuer": oidc.url},
            {"kind": "buildkite", "issuer": buildkite.url, "pipelines": [pipeline]},
        ]
        with ResultsLoop(tmp_path, github, oidc, callbacks={"oidc_issuers": issuers}) as loop:
            payload = loop.open_pr("acme/l2")
            now = loop.clock.now()
            mapped = buildkite.buildkite_token(
                organization_id="o-1", pipeline_id="p-1", issued_at=now
            )
            other = buildkite.buildkite_token(
                organization_id="o-1", pipeline_id="p-2", issued_at=now
            )
            assert loop.callback("acme/l2", payload, token=other).status_code == 403
            assert loop.callback("acme/l2", payload, token=mapped).status_code == 200
            jobs = loop.rows("SELECT repo, identity FROM job_runs")
    assert jobs == [
        {"repo": "acme/l2", "identity": "buildkite:organization:acme:pipeline:spyre:ref:main"}
    ]
