"""Map GitHub's HTTP answers to typed failures. No I/O."""

from __future__ import annotations

from collections.abc import Mapping

from relay.jobs import PermanentError, RetryableError


class GitHubError(Exception):
    status_code: int = 0


class GitHubRetryableError(RetryableError, GitHubError):
    def __init__(
        self, message: str, status_code: int = 0, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message, headers)
        self.status_code = status_code


class GitHubPermanentError(PermanentError, GitHubError):
    def __init__(self, message: str, status_code: int = 0) -> None:
        super().__init__(message)
        self.status_code = status_code


class RateLimited(GitHubRetryableError):
    """Primary or secondary rate limit: wait as the headers say."""


class BadCredentials(GitHubRetryableError):
    """401: the token was refused (expired or revoked); a new token may work."""


def is_rate_limited(status: int, headers: Mapping[str, str], body: str) -> bool:
    lowered = {k.lower(): v for k, v in headers.items()}
    if status == 429:
        return True
    if status != 403:
        return False
    return (
        "retry-after" in lowered
        or lowered.get("x-ratelimit-remaining") == "0"
        or "rate limit" in body.lower()
    )


def interpret(status: int, headers: Mapping[str, str], body: str, what: str) -> None:
    """Raise the failure that an HTTP answer means; return for 2xx."""
    if 200 <= status < 300:
        return
    snippet = body[:300]
    if is_rate_limited(status, headers, body):
        raise RateLimited(f"{what}: rate limited ({status}): {snippet}", status, headers)
    if status == 401:
        raise BadCredentials(f"{what}: bad credentials (401): {snippet}", status, headers)
    if status >= 500 or status in (408, 409):
        raise GitHubRetryableError(f"{what}: GitHub answered {status}: {snippet}", status, headers)
    raise GitHubPermanentError(f"{what}: GitHub answered {status}: {snippet}", status)
