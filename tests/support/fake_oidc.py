"""A fake OIDC issuer: real HTTP on 127.0.0.1, real RS256 JWTs signed with a test key.

It plays GitHub Actions' token service and Buildkite's issuer for tests of the
relay's callback endpoint and of ``spyre-ci ci report``.

Served endpoints (``issuer.url`` is ``http://127.0.0.1:<port>``):

- ``GET /.well-known/openid-configuration`` -> ``{"issuer": url, "jwks_uri": url + "/jwks", ...}``
- ``GET /jwks`` -> ``{"keys": [...]}`` every published RSA public key (kid, alg RS256, use sig)
- ``GET /actions/token?api-version=2.0&audience=<aud>`` with
  ``Authorization: bearer <request token>`` -> ``{"value": "<jwt>"}``: GitHub Actions'
  token-request protocol (``$ACTIONS_ID_TOKEN_REQUEST_URL`` + ``&audience=...`` with
  ``$ACTIONS_ID_TOKEN_REQUEST_TOKEN``). Missing/unknown bearer -> 401. Without an
  ``audience`` parameter the token's ``aud`` is the issuer URL, as GitHub does.

Python API::

    with FakeOidcIssuer() as issuer:              # starts on a free port, stops on exit
        jwt = issuer.github_actions_token("acme/spyre-ci-downstream")
        jwt = issuer.buildkite_token(organization_id="org-1", pipeline_id="pipe-1")
        jwt = issuer.token({"repository": "a/b"}, expires_in=-10)   # any claims; expired
        jwt = issuer.token({...}, kid="unknown")      # a kid the JWKS does not publish
        jwt = issuer.forged_token({...})              # right kid, signed with another key
        jwt = issuer.token({...}, algorithm="HS256")  # wrong algorithm (signed with a secret)
        new_kid = issuer.rotate_key(publish=False)    # sign with a new key not yet published
        issuer.publish_pending_keys()                 # ... which the JWKS now lists
        issuer.retire_key(old_kid)                    # stop publishing a key
        env = issuer.actions_env("acme/repo")         # ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN
        issuer.discovery_requests, issuer.jwks_requests, issuer.token_requests  # counters

``issued_at=`` (unix seconds) mints a token at another time than now (tests with a manual
clock). Default claims: ``iss`` = url, ``aud`` = ``audience`` (``pytorch-cross-repo-ci-relay``),
``iat``/``nbf`` = now, ``exp`` = now + 300 s, ``sub`` derived from the identity.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.json_handler import JsonHandler

DEFAULT_AUDIENCE = "pytorch-cross-repo-ci-relay"


@dataclass
class _Key:
    kid: str
    private: rsa.RSAPrivateKey
    published: bool


def _new_key(kid: str, published: bool) -> _Key:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _Key(kid, private, published)


class FakeOidcIssuer:
    def __init__(self, audience: str = DEFAULT_AUDIENCE) -> None:
        self.audience = audience
        self._keys: list[_Key] = [_new_key("test-key-1", published=True)]
        self._signing = self._keys[0]
        self._request_tokens: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.discovery_requests = 0
        self.jwks_requests = 0
        self.token_requests = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeOidcIssuer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOidcIssuer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- keys ------------------------------------------------------------
    @property
    def signing_kid(self) -> str:
        return self._signing.kid

    def rotate_key(self, publish: bool = True) -> str:
        """Sign from now on with a new key; ``publish=False`` keeps it out of the JWKS."""
        with self._lock:
            key = _new_key(f"test-key-{len(self._keys) + 1}", published=publish)
            self._keys.append(key)
            self._signing = key
        return key.kid

    def publish_pending_keys(self) -> None:
        with self._lock:
            for key in self._keys:
                key.published = True

    def retire_key(self, kid: str) -> None:
        with self._lock:
            for key in self._keys:
                if key.kid == kid:
                    key.published = False

    def jwks(self) -> dict[str, Any]:
        with self._lock:
            published = [k for k in self._keys if k.published]
        keys = []
        for key in published:
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.private.public_key()))
            keys.append({**jwk, "kid": key.kid, "alg": "RS256", "use": "sig"})
        return {"keys": keys}

    # -- tokens ----------------------------------------------------------
    def token(
        self,
        claims: dict[str, Any],
        *,
        expires_in: float = 300,
        kid: str | None = None,
        algorithm: str = "RS256",
        issued_at: float | None = None,
    ) -> str:
        now = int(time.time() if issued_at is None else issued_at)
        full = {"iss": self.url, "aud": self.audience, "iat": now, "nbf": now}
        full["exp"] = int(now + expires_in)
        full.update(claims)
        headers = {"kid": kid or self._signing.kid}
        if algorithm == "HS256":
            return jwt.encode(full, "not-an-rsa-key-" * 3, algorithm="HS256", headers=headers)
        return jwt.encode(full, self._signing.private, algorithm=algorithm, headers=headers)

    def forged_token(self, claims: dict[str, Any]) -> str:
        """A token with the current kid but signed by a key the issuer never had."""
        now = int(time.time())
        full = {"iss": self.url, "aud": self.audience, "iat": now, "exp": now + 300, **claims}
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return jwt.encode(full, stranger, algorithm="RS256", headers={"kid": self._signing.kid})

    def github_actions_token(
        self, repository: str, *, issued_at: float | None = None, **claims: Any
    ) -> str:
        owner = repository.split("/")[0]
        base = {
            "sub": f"repo:{repository}:ref:refs/heads/main",
            "repository": repository,
            "repository_owner": owner,
            "ref": "refs/heads/main",
            "event_name": "repository_dispatch",
        }
        return self.token({**base, **claims}, issued_at=issued_at)

    def buildkite_token(
        self,
        organization_slug: str = "acme",
        pipeline_slug: str = "spyre",
        *,
        issued_at: float | None = None,
        **claims: Any,
    ) -> str:
        base = {
            "sub": f"organization:{organization_slug}:pipeline:{pipeline_slug}:ref:main",
            "organization_slug": organization_slug,
            "pipeline_slug": pipeline_slug,
            "build_number": 1,
        }
        return self.token({**base, **claims}, issued_at=issued_at)

    # -- GitHub Actions' token-request protocol --------------------------
    def actions_env(self, repository: str, **claims: Any) -> dict[str, str]:
        """Environment a GitHub Actions job with ``id-token: write`` would see."""
        request_token = secrets.token_urlsafe(16)
        with self._lock:
            self._request_tokens[request_token] = {"repository": repository, **claims}
        return {
            "ACTIONS_ID_TOKEN_REQUEST_URL": f"{self.url}/actions/token?api-version=2.0",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": request_token,
        }

    def _token_for_request(self, bearer: str, audience: str | None) -> str | None:
        with self._lock:
            claims = self._request_tokens.get(bearer)
        if claims is None:
            return None
        repository = claims["repository"]
        extra = {k: v for k, v in claims.items() if k != "repository"}
        token = self.github_actions_token(repository, aud=audience or self.url, **extra)
        return token

    # -- HTTP ------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path == "/.well-known/openid-configuration":
                    issuer.discovery_requests += 1
                    self._json(200, issuer._discovery())
                elif parts.path == "/jwks":
                    issuer.jwks_requests += 1
                    self._json(200, issuer.jwks())
                elif parts.path == "/actions/token":
                    self._actions_token(parse_qs(parts.query))
                else:
                    self._json(404, {"message": "Not Found"})

            def _actions_token(self, query: dict[str, list[str]]) -> None:
                issuer.token_requests += 1
                scheme, _, bearer = self.headers.get("Authorization", "").partition(" ")
                audience = query.get("audience", [None])[0]
                token = issuer._token_for_request(bearer.strip(), audience)
                if scheme.lower() != "bearer" or token is None:
                    self._json(401, {"message": "Bad credentials"})
                else:
                    self._json(200, {"count": 1, "value": token})

        return Handler

    def _discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "claims_supported": ["sub", "aud", "exp", "iat", "iss", "repository"],
        }
