"""An OIDC issuer's signing keys, fetched from its discovery document and cached.

Key rotation: a token signed with a key id we do not know triggers a refetch,
but at most once per ``min_refetch_seconds`` so that a flood of tokens with
made-up key ids cannot make us hammer the issuer. The cache also expires after
``ttl_seconds`` so that removed keys stop being trusted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import jwt
import requests

from relay.clock import Clock

FetchJson = Callable[[str], Any]


class JwksUnavailable(Exception):
    """The issuer's discovery document or key set could not be fetched or read."""


class UnknownSigningKey(Exception):
    """No key with this id is published by the issuer, even after a refetch."""


def http_get_json(url: str) -> Any:
    """The default fetcher: a plain HTTPS GET with a short timeout."""
    try:
        response = requests.get(url, timeout=5)
        response.raise_for_status()
        return response.json()
    except (requests.RequestException, ValueError) as error:
        raise JwksUnavailable(f"cannot fetch {url}: {error}") from error


class JwksCache:
    def __init__(
        self,
        issuer: str,
        fetch_json: FetchJson,
        clock: Clock,
        ttl_seconds: float = 3600.0,
        min_refetch_seconds: float = 30.0,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self._fetch_json = fetch_json
        self._clock = clock
        self._ttl = ttl_seconds
        self._min_refetch = min_refetch_seconds
        self._keys: dict[str, Any] = {}
        self._fetched_at: float | None = None
        self._lock = threading.Lock()
        self.fetch_count = 0

    def key_for(self, kid: str) -> Any:
        """The public key for ``kid``; refetches (bounded) when it is unknown or stale."""
        with self._lock:
            now = self._clock.now()
            if self._stale(now) or (kid not in self._keys and self._may_refetch(now)):
                self._refresh(now)
            key = self._keys.get(kid)
        if key is None:
            raise UnknownSigningKey(f"issuer {self.issuer} publishes no key with kid {kid!r}")
        return key

    def _stale(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at >= self._ttl

    def _may_refetch(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at >= self._min_refetch

    def _refresh(self, now: float) -> None:
        discovery = self._fetch_json(f"{self.issuer}/.well-known/openid-configuration")
        if not isinstance(discovery, dict) or not isinstance(discovery.get("jwks_uri"), str):
            raise JwksUnavailable(f"discovery document of {self.issuer} has no jwks_uri")
        if str(discovery.get("issuer", "")).rstrip("/") != self.issuer:
            raise JwksUnavailable(f"discovery document of {self.issuer} names another issuer")
        self._keys = _rsa_keys(self._fetch_json(discovery["jwks_uri"]), self.issuer)
        self._fetched_at = now
        self.fetch_count += 1


def _rsa_keys(jwks: Any, issuer: str) -> dict[str, Any]:
    if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
        raise JwksUnavailable(f"key set of {issuer} has no 'keys' list")
    keys: dict[str, Any] = {}
    for entry in jwks["keys"]:
        if not isinstance(entry, dict) or entry.get("kty") != "RSA" or "kid" not in entry:
            continue
        if entry.get("alg", "RS256") != "RS256" or entry.get("use", "sig") != "sig":
            continue
        try:
            keys[str(entry["kid"])] = jwt.PyJWK(entry, algorithm="RS256").key
        except jwt.PyJWTError:
            continue  # one unreadable key must not hide the others
    return keys
