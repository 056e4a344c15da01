"""Per-repository token buckets for callbacks (pure apart from the injected clock).

CRCR's fixed-window limit starved matrix builds: 60 shards finishing together
all called back within a second and most were refused. A token bucket lets a
repository spend a large burst at once (``burst``) while bounding its sustained
rate (``rate_per_second``). A refused caller is told when a token will be
available (``Retry-After``). Buckets live in the process: with several relay
processes each enforces its own share, which errs on the side of accepting.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from relay.clock import Clock


@dataclass
class _Bucket:
    tokens: float
    refilled_at: float


class TokenBucketLimiter:
    def __init__(self, rate_per_second: float, burst: int, clock: Clock) -> None:
        if rate_per_second <= 0 or burst < 1:
            raise ValueError("rate_per_second must be > 0 and burst >= 1")
        self._rate = rate_per_second
        self._burst = float(burst)
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float | None:
        """Spend one token for ``key``; None if granted, else seconds until one is due."""
        now = self._clock.now()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(self._burst, now)
            elapsed = max(0.0, now - bucket.refilled_at)
            bucket.tokens = min(self._burst, bucket.tokens + elapsed * self._rate)
            bucket.refilled_at = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return (1.0 - bucket.tokens) / self._rate


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` takes whole seconds; never tell a client 0."""
    return str(max(1, math.ceil(seconds)))
