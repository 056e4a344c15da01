"""The webhook endpoint, through a real uvicorn server, with GitHub's real payloads."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from relay.outbox import queue_stats
from relay.webhook.signature import sign
from tests.relay.conftest import UPSTREAM
from tests.support.relay_server import (
    TEST_SECRET,
    InProcessRelay,
    fixture_body,
    post_webhook,
    signed_headers,
)

DISPATCHED = [
    "pull_request.opened",
    "pull_request.reopened",
    "pull_request.synchronize",
    "pull_request.closed",
    "push",
    "push.with-new-branch",
]


def _rows(
    relay: InProcessRelay, sql: str, params: tuple[object, ...] = ()
) -> list[dict[str, object]]:
    with relay.state.store.transaction(write=False) as tx:
        return tx.fetchall(sql, params)


@pytest.mark.parametrize("fixture", DISPATCHED)
def test_dispatched_events_are_stored_and_enqueued_per_target(
    relay: InProcessRelay, fixture: str
) -> None:
    event = fixture.split(".")[0]
    response = post_webhook(relay.url, event, fixture_body(fixture), delivery_id=f"d-{fixture}")
    assert response.status_code == 202, response.text
    assert response.json() == {
        "delivery_id": f"d-{fixture}",
        "route": "dispatch",
        "duplicate": False,
        "enqueued": 3,
    }
    [row] = _rows(relay, "SELECT * FROM deliveries WHERE delivery_id = ?", (f"d-{fixture}",))
    assert (row["event"], row["route"], row["repo"]) == (event, "dispatch", UPSTREAM)
    assert row["payload"] == fixture_body(fixture).decode()  # stored unchanged
    targets = {
        r["target"]
        for r in _rows(relay, "SELECT target FROM outbox WHERE delivery_id = ?", (f"d-{fixture}",))
    }
    assert targets == {"org/onboarding", "org/observed", "org/stable"}


def test_pull_request_facts_are_recorded(relay: InProcessRelay) -> None:
    body = fixture_body("pull_request.synchronize")
    post_webhook(relay.url, "pull_request", body, delivery_id="sync")
    [row] = _rows(relay, "SELECT action, pr_number, head_sha FROM deliveries")
    pr = json.loads(body)["pull_request"]
    assert row == {
        "action": "synchronize",
        "pr_number": pr["number"],
        "head_sha": pr["head"]["sha"],
    }


def test_redelivery_is_acknowledged_and_not_enqueued_twice(relay: InProcessRelay) -> None:
    body = fixture_body("push")
    first = post_webhook(relay.url, "push", body, delivery_id="same")
    again = post_webhook(relay.url, "push", body, delivery_id="same")
    assert first.status_code == again.status_code == 202
    assert again.json()["duplicate"] is True and again.json()["enqueued"] == 0
    assert sum(queue_stats(relay.state.store, now=0).pending.values()) == 3


@pytest.mark.parametrize(
    ("fixture", "route"),
    [
        ("pull_request.labeled", "ignored"),
        ("check_run.rerequested", "rerun"),
        ("check_suite.rerequested", "rerun"),
    ],
)
def test_recorded_routes_are_stored_without_dispatch(
    relay: InProcessRelay, fixture: str, route: str
) -> None:
    body = json.loads(fixture_body(fixture))
    body["repository"]["full_name"] = UPSTREAM  # check_run's fixture comes from another repository
    raw = json.dumps(body).encode()
    response = post_webhook(relay.url, fixture.split(".")[0], raw)
    assert response.status_code == (200 if route == "ignored" else 202)
    [row] = _rows(relay, "SELECT route FROM deliveries")
    assert row["route"] == route
    assert queue_stats(relay.state.store, now=0).pending == {}


def test_crcr_label_is_routed_to_the_label_handler(relay: InProcessRelay) -> None:
    body = json.loads(fixture_body("pull_request.labeled"))
    body["label"]["name"] = "ciflow/crcr/spyre"
    response = post_webhook(relay.url, "pull_request", json.dumps(body).encode())
    assert response.status_code == 202 and response.json()["route"] == "label"


@pytest.mark.parametrize("fixture", ["ping", "repository_dispatch"])
def test_other_events_are_ignored_and_not_stored(relay: InProcessRelay, fixture: str) -> None:
    response = post_webhook(relay.url, fixture.split(".")[0], fixture_body(fixture))
    assert response.status_code == 200 and response.json()["ignored"] is True
    assert _rows(relay, "SELECT delivery_id FROM deliveries") == []


def test_other_repositories_are_ignored(relay: InProcessRelay) -> None:
    body = json.loads(fixture_body("push"))
    body["repository"]["full_name"] = "someone/else"
    response = post_webhook(relay.url, "push", json.dumps(body).encode())
    assert response.status_code == 200 and response.json()["ignored"] is True
    assert _rows(relay, "SELECT delivery_id FROM deliveries") == []


def _post(relay: InProcessRelay, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{relay.url}/github/webhook", content=body, headers=headers, timeout=10)


@pytest.mark.parametrize("missing", ["X-Hub-Signature-256", "X-GitHub-Event", "X-GitHub-Delivery"])
def test_missing_header_is_400_naming_it(relay: InProcessRelay, missing: str) -> None:
    body = fixture_body("push")
    headers = signed_headers("push", body)
    del headers[missing]
    response = _post(relay, body, headers)
    assert response.status_code == 400
    assert missing.lower() in response.json()["error"].lower()


def test_wrong_signature_is_401_and_nothing_is_stored(relay: InProcessRelay) -> None:
    body = fixture_body("push")
    response = post_webhook(relay.url, "push", body, secret="not-the-secret")
    assert response.status_code == 401
    tampered = body.replace(b"Codertocat", b"Codertocax", 1)
    headers = signed_headers("push", body)
    assert _post(relay, tampered, headers).status_code == 401
    assert _rows(relay, "SELECT delivery_id FROM deliveries") == []


def test_sha1_only_signature_is_rejected(relay: InProcessRelay) -> None:
    import hashlib
    import hmac

    body = fixture_body("push")
    headers = signed_headers("push", body)
    del headers["X-Hub-Signature-256"]
    headers["X-Hub-Signature"] = (
        "sha1=" + hmac.new(TEST_SECRET.encode(), body, hashlib.sha1).hexdigest()
    )
    response = _post(relay, body, headers)
    assert response.status_code == 401 and "SHA-1" in response.json()["error"]


def test_non_json_content_type_is_415(relay: InProcessRelay) -> None:
    body = b"payload=" + fixture_body("push")
    headers = {**signed_headers("push", body), "Content-Type": "application/x-www-form-urlencoded"}
    assert _post(relay, body, headers).status_code == 415


def test_body_over_the_limit_is_413(relay: InProcessRelay) -> None:
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    response = _post(relay, body, signed_headers("push", body))
    assert response.status_code == 413


def test_signed_body_that_is_not_a_json_object_is_400(relay: InProcessRelay) -> None:
    body = b"[1, 2, 3]"
    assert _post(relay, body, signed_headers("push", body)).status_code == 400


MALFORMED = [
    ("pull_request.opened", ["pull_request"], "x", "pull_request"),
    ("pull_request.opened", ["pull_request", "head"], "x", "pull_request.head"),
    ("pull_request.opened", ["pull_request", "labels"], ["x"], "pull_request.labels[0]"),
    ("pull_request.labeled", ["label"], "x", "label"),
    ("check_run.rerequested", ["check_run"], "x", "check_run"),
    ("check_run.rerequested", ["check_run", "pull_requests"], "x", "check_run.pull_requests"),
    ("check_suite.rerequested", ["check_suite"], [], "check_suite"),
    ("push", ["repository"], "Codertocat/Hello-World", "repository"),
    ("pull_request.opened", ["repository"], "Codertocat/Hello-World", "repository"),
]


@pytest.mark.parametrize(("fixture", "path", "value", "field"), MALFORMED)
def test_signed_body_of_the_wrong_shape_is_400_naming_the_field(
    relay: InProcessRelay, fixture: str, path: list[str], value: object, field: str
) -> None:
    payload = json.loads(fixture_body(fixture))
    payload["repository"]["full_name"] = UPSTREAM
    parent = payload
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    body = json.dumps(payload).encode()
    event = fixture.split(".")[0]
    response = _post(relay, body, signed_headers(event, body))
    assert response.status_code == 400, response.text
    assert f"field {field} must be" in response.json()["error"]
    assert _rows(relay, "SELECT delivery_id FROM deliveries") == []


def test_several_secrets_are_accepted_for_rotation(sqlite_url: str, allowlist: object) -> None:
    from tests.relay.conftest import make_config

    config = make_config(sqlite_url, webhook_secrets=["new-secret", TEST_SECRET])
    with InProcessRelay(config, allowlist=allowlist) as server:
        for secret in ("new-secret", TEST_SECRET):
            response = post_webhook(server.url, "push", fixture_body("push"), secret=secret)
            assert response.status_code == 202, secret
        assert (
            post_webhook(server.url, "push", fixture_body("push"), secret="retired").status_code
            == 401
        )


def test_signature_is_computed_over_raw_bytes_not_reparsed_json(relay: InProcessRelay) -> None:
    body = (
        b'{"ref": "refs/heads/main",   "after": "abc", "repository": {"full_name": "%s"}}'
        % UPSTREAM.encode()
    )
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "push",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(body, TEST_SECRET.encode()),
    }
    assert _post(relay, body, headers).status_code == 202


def test_store_locked_past_the_timeout_answers_503(tmp_path, allowlist) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from tests.relay.conftest import make_config

    url = f"sqlite:///{tmp_path / 'relay.db'}"
    config = make_config(url, store_timeout_seconds=0.2)
    with InProcessRelay(config, allowlist=allowlist) as server:
        blocker = sqlite3.connect(tmp_path / "relay.db", isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            response = post_webhook(
                server.url, "push", fixture_body("push"), delivery_id="during-outage"
            )
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert response.status_code == 503
        # GitHub's redelivery then succeeds: nothing was half-written.
        assert (
            post_webhook(
                server.url, "push", fixture_body("push"), delivery_id="during-outage"
            ).status_code
            == 202
        )


# --- signed bodies GitHub would never send: 4xx naming the fault, nothing stored ------


def _pr_with(**changes: object) -> dict[str, object]:
    payload: dict[str, object] = json.loads(fixture_body("pull_request.synchronize"))
    for dotted, value in changes.items():
        node = payload
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[part]  # type: ignore[assignment]
        node[last] = value
    return payload


def _encoded(payload: dict[str, object], encoding: str = "utf-8") -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode(encoding, errors="surrogatepass")


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (_encoded(_pr_with(), "utf-16"), "UTF-16"),
        (_encoded(_pr_with(), "utf-32-le"), "UTF-16/UTF-32"),
        (b"\xef\xbb\xbf" + _encoded(_pr_with()), "byte order mark"),
        (_encoded(_pr_with(), "latin-1").replace(b"}", b"\xe9}", 1), "not UTF-8"),
        (_encoded(_pr_with(number=2**63)), "field number is out of range"),
        (_encoded(_pr_with(number=-(2**63) - 1)), "field number is out of range"),
        (_encoded(_pr_with(pull_request__head__sha="abc\x00")), "pull_request.head.sha"),
        (_encoded(_pr_with(action="synchronize\x00")), "field action contains"),
        (_encoded(_pr_with(action="\x1b[31m")), "U+001B"),
        (json.dumps(_pr_with(pull_request__title="\ud800")).encode(), "pull_request.title"),
        (_encoded(_pr_with(pull_request__title="x")).replace(b'"x"', b"NaN"), "NaN"),
        (_encoded(_pr_with(sender="@")).replace(b'"@"', b"[" * 100 + b"]" * 100), "sender"),
        (_encoded(_pr_with(sender="@")).replace(b'"@"', b"[" * 50000 + b"]" * 50000), "deep"),
    ],
    ids=[
        "utf-16",
        "utf-32",
        "bom",
        "latin-1",
        "number-2**63",
        "number-below-bigint",
        "nul-in-head-sha",
        "nul-in-action",
        "escape-in-action",
        "lone-surrogate",
        "nan",
        "nested-100",
        "nested-50000",
    ],
)
def test_a_signed_body_github_would_not_send_is_a_400_naming_the_fault(
    relay: InProcessRelay, body: bytes, named: str
) -> None:
    answer = httpx.post(
        f"{relay.url}/github/webhook",
        content=body,
        headers=signed_headers("pull_request", body, delivery_id="odd"),
        timeout=10,
    )
    assert answer.status_code == 400, answer.text
    assert named in answer.json()["error"]
    assert _rows(relay, "SELECT delivery_id FROM deliveries") == []
    assert _rows(relay, "SELECT job_id FROM outbox") == []


@pytest.mark.parametrize("delivery_id", ["a b", "x" * 201, "é"])
def test_a_delivery_id_that_cannot_key_the_store_is_a_400_naming_the_header(
    relay: InProcessRelay, delivery_id: str
) -> None:
    body = fixture_body("push")
    headers = {**signed_headers("push", body), "X-GitHub-Delivery": delivery_id}
    answer = httpx.post(
        f"{relay.url}/github/webhook",
        content=body,
        headers={k.encode(): v.encode("latin-1") for k, v in headers.items()},
        timeout=10,
    )
    assert answer.status_code == 400 and "X-GitHub-Delivery" in answer.json()["error"]
    assert _rows(relay, "SELECT delivery_id FROM deliveries") == []


def test_odd_but_valid_content_in_fields_the_relay_only_carries_is_dispatched_unchanged(
    dispatching_relay_each_store: InProcessRelay, fake_github: object
) -> None:
    """NUL and control characters, emoji, big integers and deep (within the limit)
    nesting where the relay stores nothing of its own: accepted, stored and sent as is."""
    relay = dispatching_relay_each_store
    deep: object = "leaf"
    for _ in range(40):
        deep = [deep]
    payload = _pr_with(
        pull_request__body="line\x00one\x1b\x07 \U0001f600 \ufeff",
        pull_request__id=2**70,
        pull_request__milestone={"nested": deep},
    )
    body = json.dumps(payload).encode()
    answer = post_webhook(relay.url, "pull_request", body, delivery_id="odd-but-valid")
    assert answer.status_code == 202, answer.text
    worker = relay.worker()
    while worker.run_once(limit=10):
        pass
    sent = [d.client_payload for d in fake_github.dispatches]  # type: ignore[attr-defined]
    assert len(sent) == 3 and all(p["payload"] == payload for p in sent)
