"""Callbacks exactly as PyTorch's callback action sends them, through the real endpoint.

The bodies below are built the way pytorch/test-infra
``.github/actions/cross-repo-ci-relay-callback/report_callback.py`` (``build_payload``)
builds them from ``action.yml``'s environment: every ``workflow`` value is a string
(``run_id``, ``run_attempt``), ``check_run_id`` is ``job.check_run_id`` as text or,
when GitHub gives none (and always on Buildkite, ``report_callback_buildkite.sh``),
``"<run_id>-<run_attempt>"``; the time not yet known is ``null``; the current time
is ``datetime.now(timezone.utc).isoformat()`` with ``Z``; ``test_results`` is the
user's JSON (counts ``passed/failed/skipped``, no ``total`` required).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relay.hud import results_url
from tests.support.fake_github import FakeGitHub
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


def action_body(
    client_payload: dict[str, Any],
    status: str,
    *,
    check_run_id: str = "",
    conclusion: str = "",
    test_results: dict[str, Any] | None = None,
    run_id: str = "4242",
    run_attempt: str = "1",
    job_name: str = "build",
) -> dict[str, Any]:
    """``build_payload()`` of report_callback.py for a repository_dispatch run."""
    now = "2026-11-30T05:01:02.345678Z"
    workflow: dict[str, Any] = {
        "schema_version": "1",
        "status": status,
        "conclusion": (conclusion or None) if status == "completed" else None,
        "name": "Spyre CI",
        "url": f"https://github.com/acme/l2/actions/runs/{run_id}",
        "run_attempt": run_attempt,
        "job_name": job_name,
        "check_run_id": check_run_id or f"{run_id}-{run_attempt}",
        "run_id": run_id,
        "started_at": None if status == "completed" else now,
        "completed_at": None if status == "in_progress" else now,
    }
    if test_results is not None:
        workflow["test_results"] = test_results
    return {**client_payload, "workflow": workflow}


@pytest.fixture
def hud() -> Iterator[FakeHud]:
    with FakeHud(key="hud-key") as running:
        yield running


@pytest.fixture
def loop(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, hud: FakeHud
) -> Iterator[ResultsLoop]:
    callbacks = hud.callback_settings()
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as running:
        yield running


def _send(loop: ResultsLoop, body: dict[str, Any], repo: str = "acme/l2") -> Any:
    headers = {"Authorization": f"Bearer {loop.token(repo)}", "Content-Type": "application/json"}
    return loop.http.post(f"{loop.url}/github/callback/".rstrip("/"), json=body, headers=headers)


def test_a_job_without_check_run_id_reports_under_the_actions_fallback(
    loop: ResultsLoop, hud: FakeHud
) -> None:
    delivery = loop.webhook("pull_request.opened")
    loop.drain()
    payload = loop.client_payload(delivery, "acme/l2")

    started = _send(loop, action_body(payload, "in_progress"))
    assert started.status_code == 200, started.text
    assert started.json()["ok"] is True and started.json()["status"] == "in_progress"
    counts = {"passed": 7, "failed": 1, "skipped": 2}  # no "total": the action does not add one
    done = _send(loop, action_body(payload, "completed", conclusion="failure", test_results=counts))
    assert done.status_code == 200, done.text
    assert done.json()["ok"] is True and done.json()["conclusion"] == "failure"

    [job] = loop.rows("SELECT * FROM job_runs")
    assert (job["run_id"], job["run_attempt"], job["status"]) == (4242, 1, "completed")
    assert (job["check_run_ref"], job["check_run_id"]) == ("4242-1", None)
    assert (job["tests_passed"], job["tests_failed"], job["tests_total"]) == (7, 1, 10)
    assert job["completed_at"] is not None and job["execution_time"] is not None
    # The completed callback sends started_at: null; the in_progress one's time stays.
    assert job["started_at"] == pytest.approx(1796014862.345678)

    loop.drain()
    # Both steps land on one HUD row, under the key PyTorch's HUD builds.
    assert list(hud.rows) == [f"acme/l2/{delivery}/Spyre CI/build/4242-1"]
    [row] = hud.rows.values()
    assert row["untrusted"]["callback_payload"]["workflow"]["status"] == "completed"


def test_a_numeric_check_run_id_sent_as_text_keys_the_job(loop: ResultsLoop) -> None:
    payload = loop.open_pr("acme/l2")
    assert _send(loop, action_body(payload, "in_progress", check_run_id="9001")).status_code == 200
    [job] = loop.rows("SELECT check_run_id, check_run_ref FROM job_runs")
    assert job == {"check_run_id": 9001, "check_run_ref": "9001"}

    # The completed callback of another job (another check run) is refused, by text.
    other = _send(
        loop, action_body(payload, "completed", check_run_id="9002", conclusion="success")
    )
    assert other.status_code == 400
    assert "differs" in other.json()["error"] and other.json()["detail"] == other.json()["error"]
    same = _send(loop, action_body(payload, "completed", check_run_id="9001", conclusion="success"))
    assert same.status_code == 200, same.text


def test_a_retried_action_callback_is_a_repeat_not_a_conflict(loop: ResultsLoop) -> None:
    body = action_body(loop.open_pr("acme/l2"), "in_progress")
    first, again = _send(loop, body), _send(loop, body)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == first.json()


def test_the_relay_as_a_hud_accepts_crcrs_bare_authorization_key(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    # CRCR's relay (aws/lambda/cross_repo_ci_relay/utils/hud.py, forward_to_hud) sends
    # the HUD key as a bare "Authorization: <key>" header to HUD_API_URL.
    workflow = {"name": "wf", "job_name": "job", "check_run_id": "5-1", "status": "completed"}
    record = {
        "trusted": {"ci_metrics": {"queue_time": 1.0, "execution_time": 2.0},
                    "verified_repo": "acme/l2", "downstream_repo_level": "L2"},
        "untrusted": {"callback_payload": {"delivery_id": "d-9", "workflow": workflow}},
    }  # fmt: skip
    with ResultsLoop(tmp_path, github, oidc, callbacks={"hud_api_keys": ["shared"]}) as loop:
        url = results_url(loop.url + "/api/crcr/results")
        wrong = loop.http.post(url, json=record, headers={"Authorization": "other"})
        assert wrong.status_code == 401
        answer = loop.http.post(url, json=record, headers={"Authorization": "shared"})
        assert answer.status_code == 200
        assert answer.json()["ok"] is True
        assert answer.json()["dynamoKey"] == "acme/l2/d-9/wf/job/5-1"


@pytest.mark.parametrize(
    "configured",
    [
        "https://hud.example.org",
        "https://hud.example.org/",
        "https://hud.example.org/api/crcr/results",
    ],
)
def test_the_hud_url_may_be_a_base_or_crcrs_full_endpoint(configured: str) -> None:
    assert results_url(configured) == "https://hud.example.org/api/crcr/results"


def buildkite_nightly_body(sha: str, build_id: str, retry_count: int = 0) -> dict[str, Any]:
    """report_callback_buildkite.sh + build_payload() for a nightly self-report:
    RUN_ID=$BUILDKITE_BUILD_ID (a UUID), RUN_ATTEMPT=retry+1, CHECK_RUN_ID=<build>-<attempt>."""
    attempt = str(retry_count + 1)
    return {
        "event_type": "nightly",
        "delivery_id": sha,
        "payload": {"repository": {"full_name": "pytorch/pytorch"}, "head_sha": sha},
        "workflow": {
            "schema_version": "1",
            "status": "completed",
            "conclusion": "success",
            "name": "spyre-nightly",
            "url": f"https://buildkite.com/acme/spyre-nightly/builds/{build_id}",
            "run_attempt": attempt,
            "job_name": ":pytorch: nightly tests",
            "check_run_id": f"{build_id}-{attempt}",
            "run_id": build_id,
            "started_at": None,
            "completed_at": "2026-11-30T05:01:02.345678Z",
        },
    }


def test_a_buildkite_nightly_with_a_build_uuid_is_recorded(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, hud: FakeHud
) -> None:
    build_id = "0190f2a4-6b1e-4c8e-9d3a-2f5e8b7c1a90"
    sha = "b" * 40
    with FakeOidcIssuer() as buildkite:
        pipeline = {
            "repository": "acme/l2",
            "claims": {"organization_id": "o-1", "pipeline_id": "p-1"},
        }
        callbacks = hud.callback_settings(
            oidc_issuers=[
                {"kind": "github_actions", "issuer": oidc.url},
                {"kind": "buildkite", "issuer": buildkite.url, "pipelines": [pipeline]},
            ],
        )
        with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as loop:
            token = buildkite.buildkite_token(
                organization_id="o-1", pipeline_id="p-1", issued_at=loop.clock.now()
            )
            url = f"{loop.url}/github/callback"
            headers = {"Authorization": f"Bearer {token}"}
            answer = loop.http.post(
                url, json=buildkite_nightly_body(sha, build_id), headers=headers
            )
            assert answer.status_code == 200, answer.text
            retried = loop.http.post(
                url, json=buildkite_nightly_body(sha, build_id, retry_count=1), headers=headers
            )
            assert retried.status_code == 200, retried.text
            loop.drain()
            jobs = loop.rows("SELECT run_id, run_attempt, check_run_ref FROM job_runs")
    # One job per attempt, under one stable number for the build; the HUD sees the UUID.
    assert len({j["run_id"] for j in jobs}) == 1
    assert sorted((j["run_attempt"], j["check_run_ref"]) for j in jobs) == [
        (1, f"{build_id}-1"),
        (2, f"{build_id}-2"),
    ]
    assert sorted(hud.rows) == [
        f"acme/l2/{sha}/spyre-nightly/:pytorch: nightly tests/{build_id}-{n}" for n in (1, 2)
    ]
    forwarded = {
        r["untrusted"]["callback_payload"]["workflow"]["run_id"] for r in hud.rows.values()
    }
    assert forwarded == {build_id}
