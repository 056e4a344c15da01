"""Verify `X-Hub-Signature-256` over the raw body before anything is parsed. No I/O."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence

SIGNATURE_HEADER = "x-hub-signature-256"
LEGACY_SIGNATURE_HEADER = "x-hub-signature"
EVENT_HEADER = "x-github-event"
DELIVERY_HEADER = "x-github-delivery"


class WebhookRejected(Exception):
    status_code = 400


class MissingHeader(WebhookRejected):
    status_code = 400


class BadSignature(WebhookRejected):
    status_code = 401


class PayloadTooLarge(WebhookRejected):
    status_code = 413


class UnsupportedMediaType(WebhookRejected):
    status_code = 415


def sign(body: bytes, secret: bytes) -> str:
    """The header value GitHub sends: `sha256=` + hex HMAC-SHA256 of the body."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify_signature(headers: Mapping[str, str], body: bytes, secrets: Sequence[bytes]) -> None:
    """Raise `MissingHeader` or `BadSignature` unless one of `secrets` signed `body`.

    Every secret is compared (constant time each) so that rotation works: the
    new and the old secret are both configured while GitHub switches over.
    A request carrying only the SHA-1 `X-Hub-Signature` is refused.
    """
    header = headers.get(SIGNATURE_HEADER)
    if header is None:
        if headers.get(LEGACY_SIGNATURE_HEADER) is not None:
            raise BadSignature(
                "X-Hub-Signature (SHA-1) is not accepted: X-Hub-Signature-256 required"
            )
        raise MissingHeader("missing X-Hub-Signature-256 header")
    algorithm, _, digest = header.partition("=")
    if algorithm != "sha256" or not digest:
        raise BadSignature("X-Hub-Signature-256 must be sha256=<hex digest>")
    matched = False
    for secret in secrets:
        expected = sign(body, secret)
        matched |= hmac.compare_digest(expected.encode(), header.encode())
    if not matched:
        raise BadSignature("X-Hub-Signature-256 does not match the body")


# GitHub's delivery ids are GUIDs; the id is the key of everything the relay stores for
# a delivery (and part of URLs), so it is short, printable ASCII.
MAX_DELIVERY_ID_CHARS = 200
_DELIVERY_ID = re.compile(rf"[\x21-\x7e]{{1,{MAX_DELIVERY_ID_CHARS}}}")


def check_envelope(headers: Mapping[str, str], content_length: int | None, max_bytes: int) -> None:
    """Checks that need no body: event and delivery headers, content type, size."""
    for name in (EVENT_HEADER, DELIVERY_HEADER):
        if not headers.get(name):
            raise MissingHeader(f"missing {name.title()} header")
    if not _DELIVERY_ID.fullmatch(headers[DELIVERY_HEADER]):
        raise WebhookRejected(
            f"X-GitHub-Delivery must be 1..{MAX_DELIVERY_ID_CHARS} printable ASCII characters"
            " without spaces"
        )
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType(
            f"Content-Type {media_type or '(none)'!r} not supported: configure the webhook"
            " with content type application/json"
        )
    if content_length is not None and content_length > max_bytes:
        raise PayloadTooLarge(f"body of {content_length} bytes exceeds {max_bytes}")
