"""Prometheus metrics, in a registry per relay (several relays may share a test process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector


class _QueueDepthCollector(Collector):
    """Reads queue depths from the store at scrape time (correct across processes)."""

    def __init__(self, read: Callable[[], dict[str, dict[str, int]]]) -> None:
        self._read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "relay_queue_depth",
            "Outbox jobs by kind and state (pending, leased, dead), read from the store",
            labels=["kind", "state"],
        )
        up = GaugeMetricFamily(
            "relay_store_up", "1 when the store answered this scrape's queries, 0 otherwise"
        )
        try:
            depths = self._read()
        except Exception:  # a scrape must not fail because the store is down
            depths = {}
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
        for state, by_kind in depths.items():
            for kind, count in by_kind.items():
                family.add_metric([kind, state], count)
        yield family
        yield up


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = Counter(
            "relay_deliveries",
            "Webhook deliveries by event and result",
            ["event", "result"],
            registry=self.registry,
        )
        self.dispatch_latency = Histogram(
            "relay_dispatch_latency_seconds",
            "From webhook receipt to a successful dispatch",
            ["kind"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
            registry=self.registry,
        )
        self.job_attempts = Counter(
            "relay_job_attempts",
            "Outbox job attempts by kind and result (ok, retry, dead)",
            ["kind", "result"],
            registry=self.registry,
        )
        self.ingest_latency = Histogram(
            "relay_ingest_seconds",
            "Time to verify, store and enqueue a webhook",
            registry=self.registry,
        )

    def watch_queue(self, read: Callable[[], dict[str, dict[str, int]]]) -> None:
        self.registry.register(_QueueDepthCollector(read))
