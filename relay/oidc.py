"""Who is calling back: OIDC bearer tokens from GitHub Actions and Buildkite.

A callback carries ``Authorization: Bearer <JWT>``. We accept RS256 only, from
a configured issuer, for our audience, and turn the verified claims into the
downstream repository the caller speaks for:

- GitHub Actions: the ``repository`` claim (``owner/repo``).
- Buildkite: tokens name an organization and a pipeline, not a repository; a
  configured mapping says which pipeline speaks for which repository, and
  every claim listed in the mapping entry must match exactly.

``Unauthenticated`` (401) means the token itself is not acceptable;
``Forbidden`` (403) means the token is genuine but names no identity we know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import jwt
from pydantic import BaseModel, ConfigDict, Field

from relay.clock import Clock
from relay.jwks import FetchJson, JwksCache, JwksUnavailable, UnknownSigningKey

DEFAULT_AUDIENCE = "pytorch-cross-repo-ci-relay"
GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
BUILDKITE_ISSUER = "https://agent.buildkite.com"


class Unauthenticated(Exception):
    """401: no bearer token, or one we cannot verify."""


class Forbidden(Exception):
    """403: a verified token that names no identity we accept."""


class BuildkitePipeline(BaseModel):
    """One Buildkite pipeline allowed to speak for one downstream repository."""

    model_config = ConfigDict(extra="forbid")
    repository: str = Field(pattern=r"^[\w.-]+/[\w.-]+$")
    # Claims that must all be present with exactly these values, typically
    # organization_id and pipeline_id (stable across renames) or the slugs.
    claims: dict[str, str] = Field(min_length=1)


class OidcIssuer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["github_actions", "buildkite"]
    issuer: str
    pipelines: list[BuildkitePipeline] = Field(default_factory=list)


@dataclass(frozen=True)
class CallerIdentity:
    repository: str
    issuer_kind: str
    subject: str
    claims: Mapping[str, Any] = field(repr=False)


class OidcVerifier:
    def __init__(
        self,
        issuers: list[OidcIssuer],
        audience: str,
        fetch_json: FetchJson,
        clock: Clock,
        leeway_seconds: float = 60.0,
        jwks_min_refetch_seconds: float = 30.0,
    ) -> None:
        self._issuers = {i.issuer.rstrip("/"): i for i in issuers}
        self._audience = audience
        self._clock = clock
        self._leeway = leeway_seconds
        self._jwks = {
            name: JwksCache(name, fetch_json, clock, min_refetch_seconds=jwks_min_refetch_seconds)
            for name in self._issuers
        }

    def verify(self, authorization: str | None) -> CallerIdentity:
        token = _bearer(authorization)
        issuer, kid = self._issuer_of(token)
        claims = self._verified_claims(token, issuer, kid)
        return CallerIdentity(
            repository=_identity(issuer, claims),
            issuer_kind=issuer.kind,
            subject=str(claims.get("sub", "")),
            claims=claims,
        )

    def _issuer_of(self, token: str) -> tuple[OidcIssuer, str]:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError as error:
            raise Unauthenticated(f"malformed bearer token: {error}") from None
        if header.get("alg") != "RS256":
            raise Unauthenticated(f"token algorithm {header.get('alg')!r} is not RS256")
        if not isinstance(header.get("kid"), str):
            raise Unauthenticated("token header has no kid")
        issuer = self._issuers.get(str(unverified.get("iss", "")).rstrip("/"))
        if issuer is None:
            raise Unauthenticated(f"token issuer {unverified.get('iss')!r} is not trusted")
        return issuer, header["kid"]

    def _verified_claims(self, token: str, issuer: OidcIssuer, kid: str) -> dict[str, Any]:
        try:
            key = self._jwks[issuer.issuer.rstrip("/")].key_for(kid)
        except UnknownSigningKey as error:
            raise Unauthenticated(str(error)) from None
        except JwksUnavailable as error:
            raise Unauthenticated(f"cannot verify token now: {error}") from None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=["RS256"],
                audience=self._audience,
                issuer=issuer.issuer,
                # Time claims are checked below against the injectable clock.
                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False},
            )
        except jwt.PyJWTError as error:
            raise Unauthenticated(f"token rejected: {error}") from None
        self._check_times(claims)
        return claims

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now = self._clock.now()
        exp = claims.get("exp")
        if not isinstance(exp, int | float):
            raise Unauthenticated("token has no exp claim")
        if now > exp + self._leeway:
            raise Unauthenticated("token has expired")
        nbf = claims.get("nbf", claims.get("iat"))
        if isinstance(nbf, int | float) and now + self._leeway < nbf:
            raise Unauthenticated("token is not valid yet")


def _bearer(authorization: str | None) -> str:
    if not authorization:
        raise Unauthenticated("missing Authorization header")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("Authorization header is not 'Bearer <token>'")
    return token.strip()


def _identity(issuer: OidcIssuer, claims: Mapping[str, Any]) -> str:
    if issuer.kind == "github_actions":
        repository = claims.get("repository")
        if not isinstance(repository, str) or "/" not in repository:
            raise Forbidden("GitHub Actions token has no repository claim")
        return repository
    for pipeline in issuer.pipelines:
        if all(str(claims.get(k)) == v for k, v in pipeline.claims.items()):
            return pipeline.repository
    raise Forbidden(
        "Buildkite token matches no configured pipeline "
        f"(organization_slug={claims.get('organization_slug')!r}, "
        f"pipeline_slug={claims.get('pipeline_slug')!r})"
    )
