"""OIDC verification against a real HTTP issuer: GitHub Actions and Buildkite identities."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from relay.clock import Clock, ManualClock, SystemClock
from relay.jwks import http_get_json
from relay.oidc import (
    BuildkitePipeline,
    Forbidden,
    OidcIssuer,
    OidcVerifier,
    Unauthenticated,
)
from tests.support.fake_oidc import FakeOidcIssuer


@pytest.fixture(scope="module")
def github() -> Iterator[FakeOidcIssuer]:
    with FakeOidcIssuer() as issuer:
        yield issuer


@pytest.fixture(scope="module")
def buildkite() -> Iterator[FakeOidcIssuer]:
    with FakeOidcIssuer() as issuer:
        yield issuer


def _verifier(
    github: FakeOidcIssuer,
    buildkite: FakeOidcIssuer,
    clock: Clock | None = None,
    **timing: float,
) -> OidcVerifier:
    issuers = [
        OidcIssuer(kind="github_actions", issuer=github.url),
        OidcIssuer(
            kind="buildkite",
            issuer=buildkite.url,
            pipelines=[
                BuildkitePipeline(
                    repository="acme/bk-downstream",
                    claims={"organization_id": "org-1", "pipeline_id": "pipe-1"},
                )
            ],
        ),
    ]
    return OidcVerifier(
        issuers,
        "pytorch-cross-repo-ci-relay",
        http_get_json,
        SystemClock() if clock is None else clock,
        **timing,
    )


def test_github_actions_identity_is_the_repository_claim(
    github: FakeOidcIssuer, buildkite: FakeOidcIssuer
) -> None:
    identity = _verifier(github, buildkite).verify(
        "Bearer " + github.github_actions_token("acme/downstream")
    )
    assert identity.repository == "acme/downstream"
    assert identity.issuer_kind == "github_actions"


def test_buildkite_identity_comes_from_the_pipeline_mapping(
    github: FakeOidcIssuer, buildkite: FakeOidcIssuer
) -> None:
    token = buildkite.buildkite_token(organization_id="org-1", pipeline_id="pipe-1")
    assert _verifier(github, buildkite).verify(f"Bearer {token}").repository == "acme/bk-downstream"


def test_buildkite_pipeline_not_in_the_mapping_is_forbidden(
    github: FakeOidcIssuer, buildkite: FakeOidcIssuer
) -> None:
    token = buildkite.buildkite_token(organization_id="org-1", pipeline_id="pipe-2")
    with pytest.raises(Forbidden, match="no configured pipeline"):
        _verifier(github, buildkite).verify(f"Bearer {token}")


def test_github_token_without_repository_claim_is_forbidden(
    github: FakeOidcIssuer, buildkite: FakeOidcIssuer
) -> None:
    with pytest.raises(Forbidden, match="repository"):
        _verifier(github, buildkite).verify("Bearer " + github.token({"sub": "x"}))


@pytest.mark.parametrize(
    ("make_header", "message"),
    [
        (lambda g: None, "missing Authorization"),
        (lambda g: "Basic abc", "not 'Bearer"),
        (lambda g: "Bearer not-a-jwt", "malformed"),
        (lambda g: "Bearer " + g.token({"repository": "a/b"}, expires_in=-600), "expired"),
        (
            lambda g: "Bearer " + g.token({"repository": "a/b", "aud": "someone-else"}),
            "(?i)audience",
        ),
        (lambda g: "Bearer " + g.token({"repository": "a/b", "iss": "https://evil"}), "issuer"),
        (lambda g: "Bearer " + g.token({"repository": "a/b"}, algorithm="HS256"), "RS256"),
        (lambda g: "Bearer " + g.token({"repository": "a/b"}, kid="nope"), "no key with kid"),
        (lambda g: "Bearer " + g.forged_token({"repository": "a/b"}), "Signature"),
    ],
    ids=["missing", "scheme", "garbage", "expired", "audience", "issuer", "hs256", "kid", "forged"],
)
def test_unacceptable_tokens_are_unauthenticated(
    github: FakeOidcIssuer,
    buildkite: FakeOidcIssuer,
    make_header: Callable[[FakeOidcIssuer], str | None],
    message: str,
) -> None:
    with pytest.raises(Unauthenticated, match=message):
        _verifier(github, buildkite).verify(make_header(github))


def test_key_rotation_is_picked_up_by_refetching_the_jwks() -> None:
    with FakeOidcIssuer() as issuer, FakeOidcIssuer() as unused:
        clock = ManualClock(start=__import__("time").time())
        verifier = _verifier(issuer, unused, clock=clock, jwks_min_refetch_seconds=30.0)
        verifier.verify("Bearer " + issuer.github_actions_token("a/b"))
        assert issuer.jwks_requests == 1
        issuer.rotate_key()
        clock.advance(31)
        verifier.verify("Bearer " + issuer.github_actions_token("a/b"))
        assert issuer.jwks_requests == 2


def test_unknown_kids_refetch_at_most_once_per_interval() -> None:
    with FakeOidcIssuer() as issuer, FakeOidcIssuer() as unused:
        clock = ManualClock(start=__import__("time").time())
        verifier = _verifier(issuer, unused, clock=clock, jwks_min_refetch_seconds=30.0)
        verifier.verify("Bearer " + issuer.github_actions_token("a/b"))
        issuer.rotate_key(publish=False)
        for _ in range(5):
            with pytest.raises(Unauthenticated, match="no key with kid"):
                verifier.verify("Bearer " + issuer.github_actions_token("a/b"))
        assert issuer.jwks_requests == 1  # no refetch inside the interval
        issuer.publish_pending_keys()
        clock.advance(31)
        assert verifier.verify("Bearer " + issuer.github_actions_token("a/b")).repository == "a/b"
        assert issuer.jwks_requests == 2


def test_retired_key_stops_verifying_after_the_cache_expires() -> None:
    with FakeOidcIssuer() as issuer, FakeOidcIssuer() as unused:
        clock = ManualClock(start=__import__("time").time())
        verifier = _verifier(issuer, unused, clock=clock)
        old = issuer.github_actions_token("a/b")
        verifier.verify(f"Bearer {old}")
        issuer.retire_key(issuer.signing_kid)
        clock.advance(3601)
        with pytest.raises(Unauthenticated, match="no key with kid"):
            verifier.verify(f"Bearer {old}")


def test_actions_token_request_protocol(github: FakeOidcIssuer, buildkite: FakeOidcIssuer) -> None:
    import requests

    env = github.actions_env("acme/downstream")
    url = env["ACTIONS_ID_TOKEN_REQUEST_URL"] + "&audience=pytorch-cross-repo-ci-relay"
    answer = requests.get(
        url, headers={"Authorization": "bearer " + env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"]}, timeout=5
    )
    assert answer.status_code == 200
    verifier = _verifier(github, buildkite)
    assert verifier.verify("Bearer " + answer.json()["value"]).repository == "acme/downstream"
    refused = requests.get(url, headers={"Authorization": "bearer wrong"}, timeout=5)
    assert refused.status_code == 401
