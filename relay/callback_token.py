"""Signed callback tokens: prove a callback answers a dispatch we sent.

CRCR trusts any OIDC-authenticated repository to report on any delivery id it
can guess; RFC-0054 proposed a signed token and it was never built. Every
dispatch we send carries ``client_payload.callback_token``; the downstream
workflow echoes the client payload back unchanged, so the token arrives with
each callback without any change to the callback action.

Token format (ASCII, URL-safe)::

    crt1.<token_id>.<expires_at>.<mac>

``mac`` is HMAC-SHA256 (base64url, no padding) with the relay's secret over the
token id, the expiry and the binding (delivery id, repository, PR number, head
SHA). The binding is not in the token: the verifier supplies it from the
callback body and the dispatch record, so a token moved to another delivery,
repository, PR or commit no longer verifies. The token id is stored on the
dispatch record (``dispatches.callback_token_id``); a token whose id is not the
dispatch's current one (an older dispatch, a re-dispatch) is rejected, which
makes each token good for exactly one dispatch. Each step of each job of that
dispatch is then accepted once (see ``relay.callbacks.state_machine``).

Pure: no I/O, the clock is passed in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

TOKEN_PREFIX = "crt1"
# CRCR keeps DISPATCHED records for 3 days; a token must not outlive them.
DEFAULT_TOKEN_TTL_SECONDS = 3 * 24 * 3600


class CallbackTokenError(Exception):
    """The callback token is missing, malformed, forged, expired or not this dispatch's."""


@dataclass(frozen=True)
class TokenBinding:
    """What a token is bound to: one dispatch of one delivery to one repository."""

    delivery_id: str
    repository: str
    pr_number: int | None
    head_sha: str | None

    def canonical(self) -> bytes:
        pr = "" if self.pr_number is None else str(self.pr_number)
        sha = (self.head_sha or "").lower()
        return "\x1f".join((self.delivery_id, self.repository.lower(), pr, sha)).encode()


@dataclass(frozen=True)
class IssuedToken:
    token: str
    token_id: str
    expires_at: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class CallbackTokenSigner:
    """Issues and verifies callback tokens with one current secret (plus old ones)."""

    def __init__(
        self,
        secret: bytes | str,
        previous_secrets: tuple[bytes | str, ...] = (),
        ttl_seconds: int = DEFAULT_TOKEN_TTL_SECONDS,
    ) -> None:
        self._secrets = [_as_bytes(s) for s in (secret, *previous_secrets)]
        if any(len(s) < 16 for s in self._secrets):
            raise ValueError("callback token secret must be at least 16 bytes")
        self._ttl = ttl_seconds

    def issue(self, binding: TokenBinding, now: float, token_id: str | None = None) -> IssuedToken:
        token_id = token_id or secrets.token_urlsafe(12)
        expires_at = int(now) + self._ttl
        mac = self._mac(self._secrets[0], token_id, expires_at, binding)
        return IssuedToken(f"{TOKEN_PREFIX}.{token_id}.{expires_at}.{mac}", token_id, expires_at)

    def verify(
        self, token: object, binding: TokenBinding, expected_token_id: str | None, now: float
    ) -> str:
        """Return the token id, or raise CallbackTokenError saying what is wrong."""
        token_id, expires_at, mac = _parse(token)
        if not any(
            hmac.compare_digest(mac, self._mac(secret, token_id, expires_at, binding))
            for secret in self._secrets
        ):
            raise CallbackTokenError(
                "callback_token does not match this delivery, repository, PR and head SHA"
            )
        if now > expires_at:
            raise CallbackTokenError("callback_token has expired")
        if expected_token_id is None or not hmac.compare_digest(token_id, expected_token_id):
            raise CallbackTokenError("callback_token was not issued for this dispatch")
        return token_id

    @staticmethod
    def _mac(secret: bytes, token_id: str, expires_at: int, binding: TokenBinding) -> str:
        message = b"\x1e".join((token_id.encode(), str(expires_at).encode(), binding.canonical()))
        return _b64(hmac.new(secret, message, hashlib.sha256).digest())


def _parse(token: object) -> tuple[str, int, str]:
    if not isinstance(token, str) or not token:
        raise CallbackTokenError("callback_token is missing from the callback body")
    if not token.isascii():  # tokens are ASCII; hmac.compare_digest refuses other text
        raise CallbackTokenError("callback_token is malformed")
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != TOKEN_PREFIX or not parts[1] or not parts[3]:
        raise CallbackTokenError("callback_token is malformed")
    try:
        expires_at = int(parts[2])
    except ValueError:
        raise CallbackTokenError("callback_token is malformed (expiry)") from None
    return parts[1], expires_at, parts[3]


def _as_bytes(secret: bytes | str) -> bytes:
    return secret.encode() if isinstance(secret, str) else secret
