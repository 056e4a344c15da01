"""Commit statuses for deployments without an App: one per state change, GitHub's limits kept."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


def test_commit_statuses_follow_state_changes_only(
    tmp_path: Path, github: FakeGitHub, results_api: FakeResultsAPI, oidc: FakeOidcIssuer
) -> None:
    long_job = "test " + "x" * 250
    callbacks = {"status_reporting": "commit_statuses"}
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as loop:
        payload = loop.open_pr("acme/l4")
        for status in ("in_progress", "in_progress", "completed", "completed"):
            conclusion = None if status == "in_progress" else "failure"
            answer = loop.callback(
                "acme/l4", payload, status=status, job_name=long_job, conclusion=conclusion
            )
            assert answer.status_code == 200, answer.text
            loop.drain()
    assert [s["state"] for s in results_api.statuses] == ["pending", "failure"]
    assert results_api.check_runs == []
    for posted in results_api.statuses:
        assert len(posted["description"]) == 140 and posted["description"].endswith("\u2026")
        assert posted["context"].startswith("crcr/acme/l4/spyre-ci/test ")
        assert posted["sha"] == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
