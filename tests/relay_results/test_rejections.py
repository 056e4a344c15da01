"""Every way a callback is refused, through the real endpoint, in CRCR's order of checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


@pytest.fixture
def loop(tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer) -> Iterator[ResultsLoop]:
    with ResultsLoop(
        tmp_path, github, oidc, callbacks={"rate_burst": 6, "rate_per_second": 0.01}
    ) as running:
        yield running


@pytest.fixture
def delivery(loop: ResultsLoop) -> str:
    delivery_id = loop.webhook("pull_request.opened")
    loop.drain()
    return delivery_id


def _error(response: httpx.Response) -> str:
    return str(response.json()["error"])


def test_missing_bearer_token_is_401(loop: ResultsLoop, delivery: str) -> None:
    answer = loop.http.post(
        f"{loop.url}/github/callback", json=loop.client_payload(delivery, "acme/l2")
    )
    assert answer.status_code == 401 and "Authorization" in _error(answer)
    assert answer.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("mint", "status", "message"),
    [
        (lambda o: o.token({"repository": "acme/l2", "aud": "another-relay"}), 401, "udience"),
        (lambda o: o.token({"repository": "acme/l2"}, expires_in=-3600), 401, "expired"),
        (lambda o: o.forged_token({"repository": "acme/l2"}), 401, "ignature"),
        (lambda o: o.token({"sub": "no-repository"}), 403, "repository claim"),
    ],
    ids=["audience", "expired", "forged", "no-identity"],
)
def test_identity_failures(
    loop: ResultsLoop,
    delivery: str,
    mint: Callable[[FakeOidcIssuer], str],
    status: int,
    message: str,
) -> None:
    answer = loop.callback(
        "acme/l2", loop.client_payload(delivery, "acme/l2"), token=mint(loop.oidc)
    )
    assert answer.status_code == status and message in _error(answer)


def test_l1_callbacks_are_acknowledged_and_ignored(loop: ResultsLoop, delivery: str) -> None:
    answer = loop.callback("acme/l1", loop.client_payload(delivery, "acme/l1"))
    assert answer.status_code == 200 and answer.json()["ignored"] is True
    assert loop.rows("SELECT * FROM job_runs") == []


def test_a_repository_not_allowlisted_is_acknowledged_and_ignored(
    loop: ResultsLoop, delivery: str
) -> None:
    # CRCR (aws/lambda/cross_repo_ci_relay/callback/callback_handler.py, _verify_access)
    # answers 200 {"ok": true, "status": "ignored"} below L2, allowlisted or not, so a
    # demoted downstream's CI does not turn red; even before its body is looked at.
    token = loop.oidc.github_actions_token("acme/not-allowlisted", issued_at=loop.clock.now())
    answer = loop.callback("acme/l2", {"not": "a callback"}, token=token)
    assert answer.status_code == 200
    assert answer.json()["ok"] is True and answer.json()["status"] == "ignored"
    assert "not allowlisted" in answer.json()["reason"]
    assert loop.rows("SELECT * FROM job_runs") == []


def test_invalid_body_names_the_field(loop: ResultsLoop, delivery: str) -> None:
    payload = loop.client_payload(delivery, "acme/l2")
    bad = {"passed": 1, "failed": 0, "skipped": 0, "total": 3}
    answer = loop.callback("acme/l2", payload, status="completed", test_results=bad)
    assert answer.status_code == 400 and "workflow.test_results" in _error(answer)


def test_unknown_delivery_is_400(loop: ResultsLoop, delivery: str) -> None:
    payload = {**loop.client_payload(delivery, "acme/l2"), "delivery_id": "never-dispatched"}
    answer = loop.callback("acme/l2", payload)
    assert answer.status_code == 400 and "no dispatch" in _error(answer)


def test_forged_callback_token_is_403(loop: ResultsLoop, delivery: str) -> None:
    payload = loop.client_payload(delivery, "acme/l2")
    prefix, token_id, expires, _ = payload["callback_token"].split(".")
    payload["callback_token"] = ".".join((prefix, token_id, expires, "A" * 43))
    answer = loop.callback("acme/l2", payload)
    assert answer.status_code == 403 and "does not match" in _error(answer)


def test_missing_callback_token_is_403(loop: ResultsLoop, delivery: str) -> None:
    payload = loop.client_payload(delivery, "acme/l2")
    del payload["callback_token"]
    answer = loop.callback("acme/l2", payload)
    assert answer.status_code == 403 and "missing" in _error(answer)


def test_cross_repository_callback_is_403(loop: ResultsLoop, delivery: str) -> None:
    """acme/l4 presents acme/l2's dispatch (token and all) as its own: refused."""
    answer = loop.callback("acme/l4", loop.client_payload(delivery, "acme/l2"))
    assert answer.status_code == 403 and "does not match" in _error(answer)
    assert loop.rows("SELECT * FROM job_runs") == []


def test_token_replayed_on_another_delivery_is_403(loop: ResultsLoop, delivery: str) -> None:
    other = loop.webhook("pull_request.synchronize")
    loop.drain()
    payload = {
        **loop.client_payload(other, "acme/l2"),
        "callback_token": loop.client_payload(delivery, "acme/l2")["callback_token"],
    }
    answer = loop.callback("acme/l2", payload)
    assert answer.status_code == 403


def test_invalid_transitions_are_400(loop: ResultsLoop, delivery: str) -> None:
    payload = loop.client_payload(delivery, "acme/l2")
    early = loop.callback("acme/l2", payload, status="completed")
    assert early.status_code == 400 and "before in_progress" in _error(early)
    assert loop.callback("acme/l2", payload, status="in_progress").status_code == 200
    other_job = loop.callback("acme/l2", payload, status="completed", check_run_id=4242)
    assert other_job.status_code == 400 and "same job" in _error(other_job)
    assert loop.callback("acme/l2", payload, status="completed").status_code == 200
    back = loop.callback(
        "acme/l2", payload, status="in_progress", started_at="2026-11-30T05:00:00Z"
    )
    assert back.status_code == 400 and "after completed" in _error(back)


def test_rate_limit_answers_429_with_retry_after(loop: ResultsLoop, delivery: str) -> None:
    payload = loop.client_payload(delivery, "acme/l2")
    answers = [
        loop.callback("acme/l2", payload, status="in_progress", job_name=f"shard {i}")
        for i in range(7)
    ]
    assert [a.status_code for a in answers] == [200] * 6 + [429]
    assert int(answers[-1].headers["retry-after"]) >= 1
    # Another repository has its own bucket.
    assert loop.callback("acme/l4", loop.client_payload(delivery, "acme/l4")).status_code == 200


def test_oversized_body_is_413(loop: ResultsLoop, delivery: str) -> None:
    answer = loop.http.post(
        f"{loop.url}/github/callback",
        content=b"{" + b" " * (5 * 1024 * 1024) + b"}",
        headers={"Authorization": f"Bearer {loop.token('acme/l2')}"},
    )
    assert answer.status_code == 413


def test_without_required_tokens_a_crcr_client_without_one_is_accepted(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    """`require_callback_token: false`: clients of the shipped relay work unchanged..."""
    with ResultsLoop(tmp_path, github, oidc, callbacks={"require_callback_token": False}) as loop:
        delivery = loop.webhook("pull_request.opened")
        loop.drain()
        payload = loop.client_payload(delivery, "acme/l2")
        tampered = {**payload, "callback_token": payload["callback_token"][:-4] + "AAAA"}
        del payload["callback_token"]
        assert loop.callback("acme/l2", payload).status_code == 200
        # ... but a token that is sent must still be genuine.
        assert loop.callback("acme/l2", tampered, job_name="other").status_code == 403


def test_callback_racing_its_own_dispatch_is_asked_to_retry(loop: ResultsLoop) -> None:
    """Before the worker has recorded DISPATCHED: 503 + Retry-After, then accepted."""
    from relay.callbacks.tokens import payload_extension
    from relay.dispatch.dispatcher import DispatchRequest
    from tests.support.results_loop import fixture_payload

    delivery = loop.webhook("pull_request.opened")  # queued, not yet dispatched
    webhook = fixture_payload("pull_request.opened")
    request = DispatchRequest(delivery, "acme/l2", "pull_request", webhook)
    payload = {"event_type": "pull_request", "delivery_id": delivery, "payload": webhook}
    payload.update(payload_extension(loop.state, request).extra)
    early = loop.callback("acme/l2", payload)
    assert early.status_code == 503 and early.headers["retry-after"] == "2"
    loop.drain()
    assert loop.callback("acme/l2", payload).status_code == 200
