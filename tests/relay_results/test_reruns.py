"""Re-runs asked for on the upstream PR reach the downstream runs, each once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import UPSTREAM, ResultsLoop, fixture_payload


def _report(loop: ResultsLoop, delivery: str, repo: str, run_id: int, job: str) -> None:
    payload = loop.client_payload(delivery, repo)
    for status in ("in_progress", "completed"):
        answer = loop.callback(repo, payload, status=status, run_id=run_id, job_name=job)
        assert answer.status_code == 200, answer.text


@pytest.fixture
def loop(tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer) -> Iterator[ResultsLoop]:
    with ResultsLoop(tmp_path, github, oidc) as running:
        delivery = running.webhook("pull_request.opened")
        # The same head SHA dispatched again (a second delivery): a second run reports.
        again = running.webhook("pull_request.opened")
        running.drain()
        _report(running, delivery, "acme/l4", 700, "test (1/2)")
        _report(running, delivery, "acme/l4", 700, "test (2/2)")
        _report(running, again, "acme/l4", 701, "lint")
        _report(running, delivery, "acme/l2", 800, "test")  # L2: no check runs, no re-runs
        running.drain()
        yield running


def _check_run_event(name: str, external_id: str) -> dict:
    payload = fixture_payload("check_run.rerequested")
    payload["repository"]["full_name"] = UPSTREAM
    payload["check_run"].update(name=name, external_id=external_id)
    return payload


def test_check_run_rerequested_reruns_the_failed_jobs_of_that_run(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    event = _check_run_event("crcr/acme/l4/spyre-ci/test (1/2)", "700:2")
    loop.webhook("check_run.rerequested", event)
    loop.drain()
    assert results_api.reruns == [("acme/l4", 700, "rerun-failed-jobs")]


@pytest.mark.parametrize(
    ("name", "external_id"),
    [
        ("some-other-check", "700:2"),
        ("crcr/acme/l2/spyre-ci/test", "800:2"),  # an L2 repository has no re-runs
        ("crcr/acme/l4/spyre-ci/test (1/2)", "not-a-run"),
    ],
)
def test_check_runs_that_are_not_ours_rerun_nothing(
    loop: ResultsLoop, results_api: FakeResultsAPI, name: str, external_id: str
) -> None:
    loop.webhook("check_run.rerequested", _check_run_event(name, external_id))
    loop.drain()
    assert results_api.reruns == []


def test_check_suite_rerequested_reruns_each_run_once(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    event = fixture_payload("check_suite.rerequested")
    assert (
        event["check_suite"]["head_sha"]
        == fixture_payload("pull_request.opened")["pull_request"]["head"]["sha"]
    )
    loop.webhook("check_suite.rerequested", event)
    loop.drain()
    assert sorted(results_api.reruns) == [("acme/l4", 700, "rerun"), ("acme/l4", 701, "rerun")]
