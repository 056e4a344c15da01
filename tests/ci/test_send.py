"""Getting the OIDC token and POSTing the callback, retries included."""

from __future__ import annotations

import pytest

from spyre_ci.ci.oidc import NoIdToken, get_id_token, request_url
from spyre_ci.ci.send import CallbackFailed, post_callback, retry_delay
from tests.ci.loopback import REQUEST_TOKEN, loopback_server

BODY = {
    "event_type": "push",
    "delivery_id": "d",
    "payload": {},
    "workflow": {"status": "completed"},
}


def test_retry_policy() -> None:
    assert retry_delay(1, 503, {}) == 1.0
    assert retry_delay(3, None, {}) == 4.0  # no answer at all: retried
    assert retry_delay(2, 429, {"Retry-After": "7"}) == 7.0
    assert retry_delay(1, 400, {}) is None  # the relay said no: final
    assert retry_delay(1, 401, {}) is None
    assert retry_delay(5, 503, {}) is None  # bounded


def test_request_url_appends_the_audience() -> None:
    assert (
        request_url("http://x/t?api-version=2.0", "aud")
        == "http://x/t?api-version=2.0&audience=aud"
    )
    assert request_url("http://x/t", "a b") == "http://x/t?audience=a+b"


def test_token_by_githubs_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    with loopback_server() as server:
        monkeypatch.delenv("SPYRE_CI_OIDC_TOKEN", raising=False)
        monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_URL", server.token_url)
        monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", REQUEST_TOKEN)
        assert get_id_token("my-relay") == "jwt-for-my-relay"
        monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "wrong")
        with pytest.raises(NoIdToken, match="answered 401"):
            get_id_token("my-relay")


def test_no_token_source_says_what_the_job_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "SPYRE_CI_OIDC_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(NoIdToken, match="id-token: write"):
        get_id_token()


def test_callback_retries_5xx_and_429_then_succeeds() -> None:
    waits: list[float] = []
    with loopback_server() as server:
        server.script = [
            (503, {}, "{}"),
            (429, {"Retry-After": "3"}, "{}"),
            (202, {}, '{"ok": true}'),
        ]
        answer = post_callback(server.callback_url, BODY, "jwt", sleep=waits.append)
        assert answer.ok and answer.attempts == 3
        assert waits[1] == 3.0 and 1.0 <= waits[0] < 2.0
        assert server.callbacks == [BODY, BODY, BODY]  # the same body every time
        assert set(server.authorizations) == {"Bearer jwt"}


def test_refused_callback_is_not_retried_and_shows_the_relays_answer() -> None:
    with loopback_server() as server:
        server.script = [(400, {}, '{"detail": "no dispatch record for d"}')]
        with pytest.raises(CallbackFailed, match=r"HTTP 400.*no dispatch record"):
            post_callback(server.callback_url, BODY, "jwt", sleep=lambda _: None)
        assert len(server.callbacks) == 1


def test_ignored_answer_is_recognised() -> None:
    with loopback_server() as server:
        server.script = [(200, {}, '{"ignored": true}')]
        assert post_callback(server.callback_url, BODY, "jwt").ignored


def test_unreachable_relay_fails_after_bounded_attempts() -> None:
    waits: list[float] = []
    with pytest.raises(CallbackFailed, match="after 5 attempt"):
        post_callback(
            "http://127.0.0.1:9/github/callback", BODY, "jwt", timeout=1, sleep=waits.append
        )
    assert len(waits) == 4
