"""The relay's pure decisions on GitHub's real payloads: signature, routing, limits, retry."""

from __future__ import annotations

import json
from email.utils import formatdate

import pytest

from relay.dispatch.payload import (
    MAX_CLIENT_PAYLOAD_BYTES,
    PayloadTooLargeForGitHub,
    build_client_payload,
    check_limits,
)
from relay.dispatch.policy import RetryPolicy, next_attempt_at, server_wait
from relay.webhook.routing import route
from relay.webhook.signature import BadSignature, MissingHeader, sign, verify_signature
from tests.support.relay_server import fixture_body

UPSTREAM = "Codertocat/Hello-World"


def _payload(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(fixture_body(name))
    return data


# --- signature ---------------------------------------------------------------


def test_signature_matches_githubs_documented_example() -> None:
    # GitHub's documentation: secret "It's a Secret to Everybody", body "Hello, World!".
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(b"Hello, World!", b"It's a Secret to Everybody") == expected
    verify_signature(
        {"x-hub-signature-256": expected}, b"Hello, World!", [b"old", b"It's a Secret to Everybody"]
    )


@pytest.mark.parametrize("header", ["sha256=", "sha1=abc", "757107ea0eb2509fc2", "sha256=00"])
def test_malformed_or_wrong_signatures_are_rejected(header: str) -> None:
    with pytest.raises(BadSignature):
        verify_signature({"x-hub-signature-256": header}, b"body", [b"secret"])


def test_missing_signature_is_a_missing_header() -> None:
    with pytest.raises(MissingHeader):
        verify_signature({}, b"body", [b"secret"])


# --- routing -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "fixture", "kind"),
    [
        ("pull_request", "pull_request.opened", "dispatch"),
        ("pull_request", "pull_request.reopened", "dispatch"),
        ("pull_request", "pull_request.synchronize", "dispatch"),
        ("pull_request", "pull_request.closed", "dispatch"),
        ("push", "push", "dispatch"),
        ("push", "push.with-new-branch", "dispatch"),
        ("pull_request", "pull_request.labeled", "ignored"),  # not a ciflow/crcr label
        ("check_suite", "check_suite.rerequested", "rerun"),
    ],
)
def test_routing_as_the_shipped_relay(event: str, fixture: str, kind: str) -> None:
    decision = route(event, _payload(fixture), UPSTREAM)
    assert decision.kind == kind and decision.upstream


def test_crcr_label_names_the_device_and_the_pr() -> None:
    payload = _payload("pull_request.labeled")
    payload["label"] = {"name": "ciflow/crcr/spyre"}
    decision = route("pull_request", payload, UPSTREAM)
    assert (decision.kind, decision.device, decision.pr_number) == ("label", "spyre", 2)


def test_crcr_label_removed_is_routed_to_the_label_handler() -> None:
    payload = _payload("pull_request.labeled")
    payload["action"] = "unlabeled"
    payload["label"] = {"name": "ciflow/crcr/spyre"}
    decision = route("pull_request", payload, UPSTREAM)
    assert (decision.kind, decision.action, decision.device) == ("label", "unlabeled", "spyre")


def test_check_run_rerequested_carries_the_head_sha() -> None:
    payload = _payload("check_run.rerequested")
    decision = route("check_run", payload, "github/hello-world")
    assert decision.kind == "rerun"
    assert decision.head_sha == payload["check_run"]["head_sha"]  # type: ignore[index]


def test_other_repositories_and_events_are_not_upstream() -> None:
    assert not route("push", _payload("push"), "pytorch/pytorch").upstream
    assert not route("ping", _payload("ping"), "Octocoders/Hello-World").upstream


# --- client_payload and GitHub's limits ----------------------------------------


@pytest.mark.parametrize("fixture", ["pull_request.opened", "pull_request.closed", "push"])
def test_real_payloads_are_sent_unchanged(fixture: str) -> None:
    payload = _payload(fixture)
    built = build_client_payload("pull_request", "d", payload, callback_token="t")
    assert built == {
        "event_type": "pull_request",
        "delivery_id": "d",
        "payload": payload,
        "callback_token": "t",
    }


def test_limits_are_githubs() -> None:
    check_limits("x" * 100, {str(i): i for i in range(10)})
    with pytest.raises(PayloadTooLargeForGitHub, match="event_type"):
        check_limits("x" * 101, {})
    with pytest.raises(PayloadTooLargeForGitHub, match="11 top-level keys"):
        check_limits("push", {str(i): i for i in range(11)})
    with pytest.raises(PayloadTooLargeForGitHub, match="must be < 65536"):
        check_limits("push", {"pad": "x" * MAX_CLIENT_PAYLOAD_BYTES})


def test_a_payload_that_cannot_fit_even_slim_is_refused() -> None:
    with pytest.raises(PayloadTooLargeForGitHub):
        build_client_payload("push", "d", _payload("push"), **{f"k{i}": i for i in range(8)})


def test_slimming_keeps_what_downstream_workflows_read() -> None:
    pr = _payload("pull_request.synchronize")
    pr["pull_request"]["body"] = "x" * 70_000  # type: ignore[index]
    built = build_client_payload("pull_request", "d", pr)
    slim = built["payload"]
    assert built["payload_slimmed"] is True
    head = pr["pull_request"]["head"]  # type: ignore[index]
    assert slim["pull_request"]["head"] == {
        "sha": head["sha"],
        "ref": head["ref"],
        "repo": {"full_name": head["repo"]["full_name"]},
    }
    assert slim["action"] == "synchronize" and slim["number"] == pr["number"]
    assert "body" not in slim["pull_request"]


# --- retry policy ---------------------------------------------------------------


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(max_attempts=5, base_seconds=2, max_seconds=60)
    assert policy.backoff(1, rand=lambda: 0.0) == 1.0 and policy.backoff(1, rand=lambda: 1.0) == 2.0
    assert policy.backoff(3, rand=lambda: 1.0) == 8.0
    assert policy.backoff(20, rand=lambda: 1.0) == 60.0
    assert policy.exhausted(5) and not policy.exhausted(4)


def test_by_default_a_job_is_given_up_after_a_day_of_failures_not_a_count() -> None:
    policy = RetryPolicy()
    assert policy.max_attempts is None and policy.retry_window_seconds == 86400
    assert not policy.exhausted(10_000, failing_for=86399.0)
    assert policy.exhausted(2, failing_for=86400.0)
    # The default backoff stays capped: a job retried over a day waits at most 10 minutes.
    assert policy.backoff(500, rand=lambda: 1.0) == 600.0
    window = RetryPolicy(max_attempts=None, retry_window_seconds=60)
    assert window.exhausted(1, failing_for=60.0) and not window.exhausted(1, failing_for=59.0)


def test_retry_after_then_ratelimit_reset_are_honoured() -> None:
    now = 1_800_000_000.0
    assert server_wait({"Retry-After": "42"}, now) == 42
    assert server_wait({"retry-after": formatdate(now + 90, usegmt=True)}, now) == pytest.approx(
        90, abs=1
    )
    assert (
        server_wait({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now + 300))}, now)
        == 300
    )
    assert (
        server_wait({"x-ratelimit-remaining": "12", "x-ratelimit-reset": str(int(now + 300))}, now)
        is None
    )
    policy = RetryPolicy(base_seconds=1)
    assert next_attempt_at(policy, 1, now, {"retry-after": "120"}, rand=lambda: 0.5) == now + 120
    assert next_attempt_at(policy, 1, now, {}, rand=lambda: 1.0) == now + 1
