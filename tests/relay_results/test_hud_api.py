"""POST /api/crcr/results: the relay as a HUD, authenticated by a shared key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


def record(status: str = "completed", repo: str = "acme/l2") -> dict:
    workflow = {"name": "wf", "job_name": "job", "check_run_id": 7, "status": status}
    return {
        "trusted": {"ci_metrics": {"queue_time": 1, "execution_time": 2}, "verified_repo": repo},
        "untrusted": {"callback_payload": {"delivery_id": "d-1", "workflow": workflow}},
    }


@pytest.fixture
def loop(tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer) -> Iterator[ResultsLoop]:
    with ResultsLoop(
        tmp_path, github, oidc, callbacks={"hud_api_keys": ["k-new", "k-old"]}
    ) as running:
        yield running


def _post(loop: ResultsLoop, body: object, key: str | None = "k-old") -> httpx.Response:
    headers = {"x-hud-internal-bot": key} if key else {}
    return loop.http.post(f"{loop.url}/api/crcr/results", json=body, headers=headers)


@pytest.mark.parametrize("key", [None, "wrong"])
def test_without_the_shared_key_rows_are_refused(loop: ResultsLoop, key: str | None) -> None:
    assert _post(loop, record(), key).status_code == 401
    assert loop.rows("SELECT * FROM hud_rows") == []


def test_malformed_rows_name_the_field(loop: ResultsLoop) -> None:
    body = record()
    del body["trusted"]["verified_repo"]
    answer = _post(loop, body)
    assert answer.status_code == 400 and "verified_repo" in answer.json()["error"]


def test_rows_are_upserted_under_crcrs_key_and_never_regress(loop: ResultsLoop) -> None:
    assert _post(loop, record("in_progress")).status_code == 200
    assert _post(loop, record("completed"), key="k-new").json() == {
        "ok": True,
        "status": "completed",
        "dynamoKey": "acme/l2/d-1/wf/job/7",
        "key": "acme/l2/d-1/wf/job/7",
        "stored": True,
    }
    assert _post(loop, record("in_progress")).json()["stored"] is False  # a late, older row
    rows = loop.rows("SELECT key, body FROM hud_rows")
    assert [r["key"] for r in rows] == ["acme/l2/d-1/wf/job/7"]
    assert (
        json.loads(rows[0]["body"])["untrusted"]["callback_payload"]["workflow"]["status"]
        == "completed"
    )


def test_a_relay_without_keys_accepts_no_rows(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    with ResultsLoop(tmp_path, github, oidc) as loop:
        assert _post(loop, record()).status_code == 404


def _crcr_forward(url: str, record: dict, headers: dict[str, str]) -> tuple[int, dict]:
    """The request as CRCR's relay writes it (test-infra ``utils/hud.py`` ``forward_to_hud``):
    urllib, the JSON body encoded as UTF-8, Content-Type plus the key header."""
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(record).encode("utf-8"),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


@pytest.mark.parametrize(
    "headers",
    [
        {"x-hud-internal-bot": "k-new"},  # CRCR since pytorch/test-infra#8143
        {"Authorization": "k-old"},  # CRCR before it: the key as a bare Authorization value
    ],
    ids=["x-hud-internal-bot", "bare-authorization"],
)
def test_a_crcr_written_client_is_accepted_with_either_header(
    loop: ResultsLoop, headers: dict[str, str]
) -> None:
    status, answer = _crcr_forward(f"{loop.url}/api/crcr/results", record(), headers)
    assert (status, answer["stored"], answer["key"]) == (200, True, "acme/l2/d-1/wf/job/7")
    assert [r["key"] for r in loop.rows("SELECT key FROM hud_rows")] == ["acme/l2/d-1/wf/job/7"]
