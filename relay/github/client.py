"""A small GitHub REST client: per-repository auth, paced writes, typed failures.

Writes (POST/PATCH/PUT/DELETE) are paced to GitHub's secondary limits: at
least `min_write_interval_seconds` from the end of one write to the start of
the next, one write at a time per account, and at most
`max_writes_per_minute`, across all threads of the process.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import httpx

from relay.clock import SYSTEM_CLOCK, Clock
from relay.config import GitHubConfig
from relay.github.auth import AppAuth, Auth, StaticTokenAuth
from relay.github.errors import (
    BadCredentials,
    GitHubPermanentError,
    GitHubRetryableError,
    interpret,
)
from relay.jobs import Deferred

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})


class WritePacer:
    """GitHub's secondary limits, per account (key): writes are made one at a time,
    each starts at least `min_interval` after the previous one *ended*, and at most
    `per_minute` start in any minute.

    Spacing from the end rather than the start is what keeps the server's view
    right: a slow request that reaches GitHub late can no longer land closer
    than `min_interval` to the next one. GitHub also asks that writes for one
    account be serial, so each account has its own lock, held for the request;
    writers for different accounts never wait for each other.
    """

    def __init__(
        self,
        min_interval: float,
        per_minute: int,
        clock: Clock,
        max_wait: float | None = None,
    ) -> None:
        self._min_interval = min_interval
        self._per_minute = per_minute
        self._clock = clock
        # A write waits here while its job holds a lease: waiting past the lease would let
        # another worker send the same job meanwhile (a duplicate after the outbox drained).
        self.max_wait = max_wait
        self._lock = threading.Lock()
        self._accounts: dict[str, _AccountWrites] = {}

    @contextmanager
    def turn(self, key: str = "") -> Iterator[None]:
        """Hold the account's write turn for the duration of one request. A turn further
        away than `max_wait` is not waited for: GitHubRetryableError with a `retry-after`
        of when it comes, so the job is tried again then, its lease released."""
        with self._lock:
            account = self._accounts.setdefault(key, _AccountWrites())
        # one budget for both waits: for the account's lock, then for the turn itself
        started = time.monotonic()
        acquired = account.lock.acquire(timeout=-1 if self.max_wait is None else self.max_wait)
        if not acquired:
            raise self._too_far(key, self._min_interval or 1.0)
        try:
            wait = self._next_start(account) - self._clock.now()
            budget = None if self.max_wait is None else self.max_wait - (time.monotonic() - started)
            if budget is not None and wait > 0 and wait > budget:
                raise self._too_far(key, max(wait, self._min_interval or 1.0))
            self._clock.sleep(wait)
            account.starts.append(self._clock.now())
            try:
                yield
            finally:
                account.last_end = self._clock.now()
        finally:
            account.lock.release()

    def _too_far(self, key: str, wait: float) -> Deferred:
        return Deferred(
            f"write pacing: the next write turn for {key or 'the account'} is {wait:.1f} s"
            f" away, more than a job can wait within its lease ({self.max_wait:.1f} s)",
            seconds=max(1.0, wait),
        )

    def _next_start(self, account: _AccountWrites) -> float:
        now = self._clock.now()
        starts = account.starts
        while starts and now - starts[0] >= 60.0:
            starts.popleft()
        slot = now
        if account.last_end is not None:
            slot = max(slot, account.last_end + self._min_interval)
        if len(starts) >= self._per_minute:
            slot = max(slot, starts[-self._per_minute] + 60.0)
        return slot


@dataclass
class _AccountWrites:
    lock: threading.Lock = field(default_factory=threading.Lock)
    starts: deque[float] = field(default_factory=deque)
    last_end: float | None = None


class GitHubClient:
    def __init__(
        self,
        config: GitHubConfig,
        clock: Clock = SYSTEM_CLOCK,
        http: httpx.Client | None = None,
        max_write_wait: float | None = None,
    ) -> None:
        """`max_write_wait`: the longest a write may wait for its pacing turn (the worker
        passes what its lease leaves after the request's own timeouts)."""
        self.config = config
        self.api_url = config.api_url.rstrip("/")
        self._http = http or httpx.Client(timeout=config.timeout_seconds)
        self._clock = clock
        self.pacer = WritePacer(
            config.min_write_interval_seconds, config.max_writes_per_minute, clock, max_write_wait
        )
        self.auth = self._make_auth()

    def _make_auth(self) -> Auth | None:
        key = self.config.private_key_pem()
        if self.config.app_id and key:
            return AppAuth(self.config.app_id, key, self.api_url, self._http, self._clock)
        if self.config.token is not None:
            return StaticTokenAuth(self.config.token.get_secret_value())
        return None

    def account_of(self, repo: str) -> str:
        """Whose secondary limits a write for `repo` counts against: with a GitHub App,
        the installation (one per repository owner); with a token, its one user."""
        return repo.split("/")[0].lower() if isinstance(self.auth, AppAuth) else "token"

    def request(self, method: str, path: str, *, repo: str, json: Any = None) -> httpx.Response:
        """Send one request for `repo` (whose installation token is used); raise on failure."""
        if self.auth is None:
            raise GitHubPermanentError(
                "no GitHub credentials configured (github.token or github.app_id)"
            )
        what = f"{method} {path}"
        headers = {
            "Authorization": f"Bearer {self.auth.token_for(repo)}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "spyre-ci-relay",
        }
        pacing = (
            self.pacer.turn(self.account_of(repo))
            if method.upper() in WRITE_METHODS
            else nullcontext()
        )
        try:
            with pacing:
                response = self._http.request(
                    method, f"{self.api_url}{path}", headers=headers, json=json
                )
        except httpx.TimeoutException as exc:
            raise GitHubRetryableError(
                f"{what}: timed out after {self.config.timeout_seconds} s"
            ) from exc
        except httpx.TransportError as exc:
            raise GitHubRetryableError(f"{what}: {type(exc).__name__}: {exc}") from exc
        try:
            interpret(response.status_code, response.headers, response.text, what)
        except BadCredentials:
            self.auth.forget(repo)
            raise
        return response

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
