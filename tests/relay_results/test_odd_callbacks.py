"""Signed callbacks and HUD rows no real client sends: a 400 naming the field, or stored
safely; never a 500, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop

REPO = "acme/l2"


@pytest.fixture
def loop(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, each_store_url: str | None
) -> Iterator[ResultsLoop]:
    with ResultsLoop(
        tmp_path, github, oidc, store_url=each_store_url, callbacks={"hud_api_keys": ["k"]}
    ) as running:
        yield running


def _jobs(loop: ResultsLoop) -> list[dict[str, Any]]:
    return loop.rows("SELECT job_name, check_run_id, check_run_ref FROM job_runs")


@pytest.mark.parametrize(
    ("workflow", "named"),
    [
        ({"run_attempt": 2**31}, "workflow.run_attempt"),
        ({"run_id": str(2**63)}, "workflow.run_id"),
        ({"job_name": "test\x00(1/2)"}, "workflow.job_name"),
        ({"name": "wf\x1b"}, "workflow.name"),
        ({"url": "https://x.test/\x00"}, "workflow.url"),
        (
            {
                "status": "completed",
                "conclusion": "success",
                "test_results": {"passed": 2**31, "failed": 0, "skipped": 0},
            },
            "workflow.test_results.passed",
        ),
        (
            {
                "status": "completed",
                "conclusion": "success",
                "test_results": {"passed": 2**30, "failed": 2**30, "skipped": 2**30},
            },
            "must not exceed",
        ),
    ],
    ids=["attempt", "run-id", "nul-job", "escape-name", "nul-url", "count", "sum"],
)
def test_a_field_the_store_cannot_keep_is_a_400_naming_it(
    loop: ResultsLoop, workflow: dict[str, Any], named: str
) -> None:
    payload = loop.open_pr(REPO)
    answer = loop.callback(REPO, payload, **workflow)
    assert answer.status_code == 400, answer.text
    assert named in answer.json()["error"]
    assert _jobs(loop) == []


def test_a_selection_report_with_a_nul_is_refused(loop: ResultsLoop) -> None:
    payload = loop.open_pr(REPO)
    selection = {"summary": {"selected": 1}, "html": "<p>\x00</p>"}
    answer = loop.callback(REPO, payload, extra={"selection": selection})
    assert answer.status_code == 400 and "selection.html" in answer.json()["error"]
    assert loop.rows("SELECT selection_id FROM selection_reports") == []


def test_a_callback_token_of_other_characters_is_a_403_not_a_500(loop: ResultsLoop) -> None:
    payload = loop.open_pr(REPO)
    token = payload["callback_token"]
    payload["callback_token"] = token[:-1] + "é"
    answer = loop.callback(REPO, payload)
    assert answer.status_code == 403 and "malformed" in answer.json()["error"]


def test_a_check_run_id_too_large_for_a_number_is_kept_as_text(loop: ResultsLoop) -> None:
    payload = loop.open_pr(REPO)
    huge = str(10**30)
    assert loop.callback(REPO, payload, check_run_id=huge).status_code == 200
    assert _jobs(loop) == [{"job_name": "test (1/2)", "check_run_id": None, "check_run_ref": huge}]


def test_a_hud_row_whose_key_cannot_be_stored_is_a_400_naming_the_field(
    loop: ResultsLoop,
) -> None:
    for workflow, named in (
        ({"name": {"a": 1}, "job_name": "j"}, "workflow.name"),
        ({"name": "w", "job_name": "j" * 301}, "workflow.job_name"),
        ({"name": "w", "job_name": "j", "check_run_id": "1\x00"}, "workflow.check_run_id"),
    ):
        record = {
            "trusted": {"verified_repo": REPO},
            "untrusted": {"callback_payload": {"delivery_id": "d", "workflow": workflow}},
        }
        answer = loop.http.post(
            f"{loop.url}/api/crcr/results",
            content=json.dumps(record).encode("utf-16"),
            headers={"x-hud-internal-bot": "k"},
        )
        assert answer.status_code == 400 and "UTF-16" in answer.json()["error"]
        answer = loop.http.post(
            f"{loop.url}/api/crcr/results", json=record, headers={"x-hud-internal-bot": "k"}
        )
        assert answer.status_code == 400 and named in answer.json()["error"], answer.text
    assert loop.rows("SELECT key FROM hud_rows") == []
