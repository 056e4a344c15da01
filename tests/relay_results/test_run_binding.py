"""One run per dispatch: the callback token binds to the first run that claims or reports,
a duplicate run is told so at its claim and refused at its callbacks, a re-run the relay
asked for is let in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import signed_headers
from tests.support.results_loop import UPSTREAM, ResultsLoop, fixture_payload

REPO = "acme/l4"


@pytest.fixture
def loop(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, each_store_url: str | None
) -> Iterator[ResultsLoop]:
    with ResultsLoop(tmp_path, github, oidc, store_url=each_store_url) as running:
        yield running


def claim(
    loop: ResultsLoop,
    payload: dict[str, Any],
    run_id: int,
    attempt: int = 1,
    http: httpx.Client | None = None,
) -> httpx.Response:
    body = {
        **payload,
        "workflow": {"name": "spyre-ci", "run_id": str(run_id), "run_attempt": str(attempt)},
    }
    return (http or loop.http).post(
        f"{loop.url}/github/claim",
        json=body,
        headers={"Authorization": f"Bearer {loop.token(REPO)}"},
    )


def _claims(loop: ResultsLoop) -> list[dict[str, Any]]:
    return loop.rows("SELECT run_id, run_attempt, claimed_by FROM dispatch_claims")


def test_the_first_run_to_report_owns_the_dispatch_and_another_run_gets_403(
    loop: ResultsLoop,
) -> None:
    payload = loop.open_pr(REPO)
    assert loop.callback(REPO, payload, run_id=500).status_code == 200
    assert loop.callback(REPO, payload, run_id=500, job_name="other job").status_code == 200
    assert loop.callback(REPO, payload, run_id=500).status_code == 200  # identical repeat
    for run_id, attempt in ((501, 1), (500, 2)):  # another run; another attempt of it
        answer = loop.callback(REPO, payload, run_id=run_id, run_attempt=attempt)
        assert answer.status_code == 403, answer.text
        assert "bound to run 500 attempt 1" in answer.json()["error"]
    assert _claims(loop) == [{"run_id": 500, "run_attempt": 1, "claimed_by": "callback"}]
    assert {j["run_id"] for j in loop.rows("SELECT run_id FROM job_runs")} == {500}


def test_a_claim_binds_the_run_and_a_second_run_is_told_duplicate(loop: ResultsLoop) -> None:
    payload = loop.open_pr(REPO)
    first = claim(loop, payload, 600)
    assert first.status_code == 200 and first.json()["status"] == "claimed", first.text
    assert claim(loop, payload, 600).json()["status"] == "claimed"  # the same run asks again
    second = claim(loop, payload, 601)
    assert second.status_code == 200, second.text
    assert second.json() | {"reason": ""} == {
        "ok": True,
        "status": "duplicate",
        "claimed": False,
        "duplicate": True,
        "claimed_by": {"run_id": 600, "run_attempt": 1},
        "reason": "",
    }
    assert loop.callback(REPO, payload, run_id=601).status_code == 403  # if it reported anyway
    assert loop.callback(REPO, payload, run_id=600).status_code == 200
    assert _claims(loop) == [{"run_id": 600, "run_attempt": 1, "claimed_by": "claim"}]


def test_a_refused_claim_changes_nothing(loop: ResultsLoop) -> None:
    payload = loop.open_pr(REPO)
    forged = {**payload, "callback_token": payload["callback_token"][:-2] + "xx"}
    assert claim(loop, forged, 600).status_code == 403
    assert claim(loop, {**payload, "delivery_id": "unknown"}, 600).status_code == 400
    answer = loop.http.post(
        f"{loop.url}/github/claim",
        json={**payload, "workflow": {"run_id": "x y"}},
        headers={"Authorization": f"Bearer {loop.token(REPO)}"},
    )
    assert answer.status_code == 400 and "workflow.run_id" in answer.json()["error"]
    assert loop.http.post(f"{loop.url}/github/claim", json=payload).status_code == 401
    assert _claims(loop) == []
    nightly = {"event_type": "nightly", "delivery_id": "a" * 40, "payload": {}}
    assert claim(loop, nightly, 600).json()["status"] == "ignored"


def test_concurrent_claims_of_two_runs_give_one_owner(loop: ResultsLoop) -> None:
    payload = loop.open_pr(REPO)
    answers: dict[int, str] = {}
    barrier = threading.Barrier(8)

    def run(run_id: int) -> None:
        with httpx.Client(timeout=30) as http:
            barrier.wait()
            answers[run_id] = claim(loop, payload, run_id, http=http).json()["status"]

    threads = [threading.Thread(target=run, args=(700 + i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers.values()) == ["claimed"] + ["duplicate"] * 7
    [owner] = [r for r, status in answers.items() if status == "claimed"]
    assert _claims(loop) == [{"run_id": owner, "run_attempt": 1, "claimed_by": "claim"}]


def _rerequest(loop: ResultsLoop, run_id: int) -> None:
    event = fixture_payload("check_run.rerequested")
    event["repository"]["full_name"] = UPSTREAM
    event["check_run"].update(name=f"crcr/{REPO}/spyre-ci/test (1/2)", external_id=f"{run_id}:2")
    loop.webhook("check_run.rerequested", event)
    loop.drain()


def test_a_rerun_asked_for_through_the_relay_takes_over_the_dispatch(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    payload = loop.open_pr(REPO)
    for status in ("in_progress", "completed"):
        assert loop.callback(REPO, payload, status=status, run_id=900).status_code == 200
    manual = loop.callback(REPO, payload, run_id=900, run_attempt=2)
    assert manual.status_code == 403  # re-run on the downstream's own page: not ours
    _rerequest(loop, 900)
    assert results_api.reruns == [(REPO, 900, "rerun-failed-jobs")]
    for status in ("in_progress", "completed"):
        answer = loop.callback(REPO, payload, status=status, run_id=900, run_attempt=3)
        assert answer.status_code == 200, answer.text
    assert _claims(loop) == [{"run_id": 900, "run_attempt": 3, "claimed_by": "callback"}]
    # The grant is used up: a further attempt needs another re-run through the relay.
    assert loop.callback(REPO, payload, run_id=900, run_attempt=4).status_code == 403
    assert claim(loop, payload, 900, attempt=3).json()["status"] == "claimed"


def test_a_webhook_for_a_claimed_dispatch_is_unaffected(loop: ResultsLoop) -> None:
    """Claims are per dispatch: a new delivery (a new push to the PR) is a new dispatch."""
    payload = loop.open_pr(REPO)
    assert claim(loop, payload, 600).json()["status"] == "claimed"
    body = fixture_body_with_new_head()
    answer = loop.http.post(
        f"{loop.url}/github/webhook",
        content=body,
        headers=signed_headers("pull_request", body, delivery_id="next-push"),
    )
    assert answer.status_code == 202
    loop.drain()
    assert claim(loop, loop.client_payload("next-push", REPO), 601).json()["status"] == "claimed"


def fixture_body_with_new_head() -> bytes:
    import json

    payload = fixture_payload("pull_request.synchronize")
    payload["pull_request"]["head"]["sha"] = "f" * 40
    return json.dumps(payload).encode()
