"""GitHub App authentication: an RS256 JWT for the app, then an installation
token per repository, cached until shortly before its one-hour expiry."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Protocol

import httpx
import jwt

from relay.clock import Clock
from relay.github.errors import interpret

REFRESH_MARGIN_SECONDS = 300.0  # renew a token 5 minutes before GitHub expires it


class Auth(Protocol):
    def token_for(self, repo: str) -> str: ...

    def forget(self, repo: str) -> None: ...


class StaticTokenAuth:
    def __init__(self, token: str) -> None:
        self._token = token

    def token_for(self, repo: str) -> str:
        return self._token

    def forget(self, repo: str) -> None:
        """A configured token cannot be renewed."""


class AppAuth:
    def __init__(
        self, app_id: str, private_key_pem: str, api_url: str, http: httpx.Client, clock: Clock
    ) -> None:
        self.app_id = app_id
        self._key = private_key_pem
        self._api = api_url.rstrip("/")
        self._http = http
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[str, float]] = {}
        self._installations: dict[str, int] = {}

    def app_jwt(self) -> str:
        now = int(self._clock.now())
        # iat 60 s in the past against clock drift; GitHub allows at most 10 minutes.
        claims = {"iat": now - 60, "exp": now + 540, "iss": self.app_id}
        return jwt.encode(claims, self._key, algorithm="RS256")

    def _app_headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.app_jwt()}",
            "Accept": "application/vnd.github+json",
        }

    def _installation_id(self, repo: str) -> int:
        if repo not in self._installations:
            response = self._http.get(
                f"{self._api}/repos/{repo}/installation", headers=self._app_headers()
            )
            interpret(
                response.status_code, response.headers, response.text, f"installation of {repo}"
            )
            self._installations[repo] = int(response.json()["id"])
        return self._installations[repo]

    def token_for(self, repo: str) -> str:
        with self._lock:
            cached = self._tokens.get(repo)
            if cached and cached[1] - self._clock.now() > REFRESH_MARGIN_SECONDS:
                return cached[0]
            installation = self._installation_id(repo)
            response = self._http.post(
                f"{self._api}/app/installations/{installation}/access_tokens",
                headers=self._app_headers(),
            )
            interpret(response.status_code, response.headers, response.text, f"token for {repo}")
            data = response.json()
            expires_at = datetime.fromisoformat(
                data["expires_at"].replace("Z", "+00:00")
            ).timestamp()
            self._tokens[repo] = (data["token"], expires_at)
            return str(data["token"])

    def forget(self, repo: str) -> None:
        with self._lock:
            self._tokens.pop(repo, None)
            self._installations.pop(repo, None)
