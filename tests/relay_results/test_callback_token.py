"""The signed one-shot callback token: bound to one dispatch, unforgeable, expiring."""

from __future__ import annotations

import pytest

from relay.callback_token import CallbackTokenError, CallbackTokenSigner, TokenBinding

NOW = 1_800_000_000.0
SECRET = "s3cret-for-callback-tokens-0123456789"
BINDING = TokenBinding("delivery-1", "acme/downstream", 42, "a" * 40)


def _issue(signer: CallbackTokenSigner | None = None) -> tuple[CallbackTokenSigner, str, str]:
    signer = signer or CallbackTokenSigner(SECRET)
    issued = signer.issue(BINDING, NOW)
    return signer, issued.token, issued.token_id


def test_token_issued_for_a_dispatch_verifies_and_names_its_id() -> None:
    signer, token, token_id = _issue()
    assert signer.verify(token, BINDING, token_id, NOW + 60) == token_id


@pytest.mark.parametrize(
    "other",
    [
        TokenBinding("delivery-2", "acme/downstream", 42, "a" * 40),
        TokenBinding("delivery-1", "evil/downstream", 42, "a" * 40),
        TokenBinding("delivery-1", "acme/downstream", 43, "a" * 40),
        TokenBinding("delivery-1", "acme/downstream", 42, "b" * 40),
    ],
    ids=["delivery", "repository", "pr", "head_sha"],
)
def test_token_moved_to_another_binding_is_rejected(other: TokenBinding) -> None:
    signer, token, token_id = _issue()
    with pytest.raises(CallbackTokenError, match="does not match"):
        signer.verify(token, other, token_id, NOW)


def test_token_signed_with_another_secret_is_rejected() -> None:
    _, token, token_id = _issue(CallbackTokenSigner("another-secret-of-enough-length"))
    with pytest.raises(CallbackTokenError, match="does not match"):
        CallbackTokenSigner(SECRET).verify(token, BINDING, token_id, NOW)


def test_tampered_expiry_breaks_the_signature() -> None:
    signer, token, token_id = _issue()
    prefix, tid, expires, mac = token.split(".")
    forged = ".".join((prefix, tid, str(int(expires) + 10**6), mac))
    with pytest.raises(CallbackTokenError, match="does not match"):
        signer.verify(forged, BINDING, token_id, NOW)


def test_token_of_an_older_dispatch_is_rejected() -> None:
    signer, old_token, _ = _issue()
    _, _, current_id = _issue(signer)
    with pytest.raises(CallbackTokenError, match="not issued for this dispatch"):
        signer.verify(old_token, BINDING, current_id, NOW)


def test_expired_token_is_rejected() -> None:
    signer = CallbackTokenSigner(SECRET, ttl_seconds=100)
    _, token, token_id = _issue(signer)
    with pytest.raises(CallbackTokenError, match="expired"):
        signer.verify(token, BINDING, token_id, NOW + 101)


def test_rotated_secret_still_verifies_tokens_of_the_previous_one() -> None:
    _, token, token_id = _issue(CallbackTokenSigner("the-previous-secret-0123456"))
    rotated = CallbackTokenSigner(SECRET, previous_secrets=("the-previous-secret-0123456",))
    assert rotated.verify(token, BINDING, token_id, NOW) == token_id


@pytest.mark.parametrize("token", [None, "", 17, "crt1.abc", "xyz.a.1.b", "crt1.a.notanint.b"])
def test_missing_or_malformed_token_is_rejected(token: object) -> None:
    with pytest.raises(CallbackTokenError, match=r"missing|malformed"):
        CallbackTokenSigner(SECRET).verify(token, BINDING, "a", NOW)


def test_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        CallbackTokenSigner("short")
