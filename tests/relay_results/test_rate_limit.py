"""Token-bucket rate limiting: bursts from matrix builds pass, floods are told when to retry."""

from __future__ import annotations

from relay.callbacks.rate_limit import TokenBucketLimiter, retry_after_header
from relay.clock import ManualClock


def test_a_burst_up_to_the_bucket_size_passes_then_the_rate_applies() -> None:
    clock = ManualClock()
    limiter = TokenBucketLimiter(rate_per_second=2.0, burst=120, clock=clock)
    assert all(limiter.take("acme/d") is None for _ in range(120))
    wait = limiter.take("acme/d")
    assert wait is not None and 0.4 < wait <= 0.5
    assert retry_after_header(wait) == "1"
    clock.advance(0.5)
    assert limiter.take("acme/d") is None


def test_repositories_have_separate_buckets() -> None:
    limiter = TokenBucketLimiter(rate_per_second=1.0, burst=1, clock=ManualClock())
    assert limiter.take("a/x") is None
    assert limiter.take("a/x") is not None
    assert limiter.take("b/y") is None
