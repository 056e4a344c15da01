"""What a job handler may raise: failures become data at the worker boundary."""

from __future__ import annotations

from collections.abc import Mapping


class RetryableError(Exception):
    """Try the job again later; `headers` may carry retry-after / x-ratelimit-reset."""

    def __init__(self, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.headers = dict(headers or {})


class Deferred(Exception):
    """Not now, and not a failure: run the job again in `seconds` without counting this
    claim as an attempt (e.g. our own write pacing has no turn within the job's lease)."""

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


class PermanentError(Exception):
    """The job can never succeed as it is: dead-letter it now."""
