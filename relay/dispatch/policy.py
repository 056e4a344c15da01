"""When to try a failed job again, and when to give it up. No I/O.

Exponential backoff with full jitter, but never earlier than the server asked:
`retry-after` (seconds or an HTTP date) first, then `x-ratelimit-reset` when
`x-ratelimit-remaining` is 0 (GitHub's documented order).

A job is given up (dead-lettered) once it has been failing for `retry_window_seconds`
(24 h by default: a day-long outage of the HUD or of GitHub heals without an operator),
or after `max_attempts` attempts when a count is configured.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

DEFAULT_RETRY_WINDOW_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int | None = None  # None: no count limit, the window decides
    base_seconds: float = 2.0
    max_seconds: float = 600.0
    retry_window_seconds: float = DEFAULT_RETRY_WINDOW_SECONDS

    def backoff(self, attempts: int, rand: Callable[[], float] = random.random) -> float:
        """Delay before attempt `attempts + 1`: a random share of base * 2^(attempts-1)."""
        ceiling = min(self.max_seconds, self.base_seconds * 2 ** max(0, attempts - 1))
        return ceiling / 2 + rand() * ceiling / 2

    def exhausted(self, attempts: int, failing_for: float = 0.0) -> bool:
        """Give up after `attempts` attempts, the first failure `failing_for` seconds ago?"""
        if self.max_attempts is not None and attempts >= self.max_attempts:
            return True
        return failing_for >= self.retry_window_seconds


def server_wait(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds the server asked us to wait, or None if it said nothing."""
    lowered = {k.lower(): v for k, v in headers.items()}
    retry_after = lowered.get("retry-after")
    if retry_after:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(retry_after).timestamp() - now)
            except (TypeError, ValueError):
                pass
    if lowered.get("x-ratelimit-remaining") == "0" and lowered.get("x-ratelimit-reset"):
        try:
            return max(0.0, float(lowered["x-ratelimit-reset"]) - now)
        except ValueError:
            return None
    return None


def next_attempt_at(
    policy: RetryPolicy,
    attempts: int,
    now: float,
    headers: Mapping[str, str] | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    delay = policy.backoff(attempts, rand)
    asked = server_wait(headers or {}, now)
    if asked is not None:
        delay = max(delay, asked)
    return now + delay
