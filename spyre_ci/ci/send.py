"""POST the callback to the relay, retrying what is worth retrying.

The policy (`retry_delay`) is pure; `post_callback` is the thin HTTP shell. A
callback is safe to retry: the relay answers an identical repeated callback
idempotently. 4xx answers other than 408/429 are final (the relay said no).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_ATTEMPTS = 5
MAX_DELAY = 60.0


@dataclass(frozen=True)
class CallbackAnswer:
    status: int
    body: str
    attempts: int

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def ignored(self) -> bool:
        try:
            return bool(json.loads(self.body).get("ignored"))
        except (ValueError, AttributeError):
            return False


class CallbackFailed(RuntimeError):
    """The relay refused the callback or never answered; the message has its answer."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # None: no answer at all


def retry_delay(
    attempt: int,
    status: int | None,
    headers: Mapping[str, str],
    *,
    jitter: float = 0.0,
    max_attempts: int = MAX_ATTEMPTS,
) -> float | None:
    """Seconds to wait before attempt `attempt + 1`, or None to stop.

    `status` None means no answer (connection error, timeout). `Retry-After` wins
    over exponential backoff (1, 2, 4, 8 s plus jitter).
    """
    if attempt >= max_attempts:
        return None
    if status is not None and status not in RETRYABLE_STATUSES:
        return None
    retry_after = headers.get("retry-after") or headers.get("Retry-After")
    if retry_after and retry_after.strip().isdigit():
        return min(float(retry_after), MAX_DELAY)
    return min(2.0 ** (attempt - 1) + jitter, MAX_DELAY)


def post_callback(
    url: str,
    body: Mapping[str, Any],
    token: str,
    *,
    timeout: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    max_attempts: int = MAX_ATTEMPTS,
    patience: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> CallbackAnswer:
    """POST `body` with the bearer `token`; retried up to `max_attempts` times and, when
    `patience` is given, only while the retries stay within that many seconds."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    attempt = 0
    started = clock()
    while True:
        attempt += 1
        status: int | None
        answer_headers: Mapping[str, str]
        try:
            response = requests.post(url, data=data, headers=headers, timeout=timeout)
            status, answer_headers, text = response.status_code, response.headers, response.text
        except requests.RequestException as exc:
            status, answer_headers, text = None, {}, str(exc)
        if status is not None and 200 <= status < 300:
            return CallbackAnswer(status, text, attempt)
        delay = retry_delay(
            attempt, status, answer_headers, jitter=random.random(), max_attempts=max_attempts
        )
        if delay is not None and patience is not None and clock() + delay - started > patience:
            delay = None
        if delay is None:
            shown = "no answer" if status is None else f"HTTP {status}"
            raise CallbackFailed(
                f"callback to {url} failed after {attempt} attempt(s): {shown}: {text[:500]}",
                status,
            )
        sleep(delay)
