"""The outbox worker: claim jobs with a lease, run their handler, record the outcome.

Handlers come from `HANDLER_FACTORIES` ("module:function" names; the function
takes the `RelayState` and returns {kind: handler}). A handler gets a `Job`,
does its I/O, and returns None or a function run inside the completion
transaction (to record a result atomically with "done"). It raises
`RetryableError` (retry with backoff, honouring headers) or `PermanentError`
(dead letter); anything else is retried as well and logged with its traceback.
Periodic tasks (`PERIODIC_TASKS`: name -> ("module:function", interval_seconds))
run in the worker's main loop; retention pruning is one.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Mapping

from relay.dispatch.policy import RetryPolicy, next_attempt_at
from relay.jobs import Deferred, PermanentError, RetryableError
from relay.outbox import Job, claim, complete, dead_letter, defer, prune, retry_later
from relay.state import RelayState
from relay.store import StoreUnavailable, Tx

log = logging.getLogger("relay.worker")

JobHandler = Callable[[Job], Callable[[Tx], None] | None]

# Kinds that start new work downstream; a worker takes them only when no result
# (HUD row, check run, status...) is waiting, so feedback is never starved by a burst.
TRIGGER_KINDS = frozenset({"dispatch", "local_run"})

HANDLER_FACTORIES: list[str] = [
    "relay.dispatch.handler:handlers",
    "relay.callbacks.handlers:handlers",  # issue 7: hud, check_run, commit_status, rerun, redeliver
]


STORE_BACKOFF_MAX_SECONDS = 30.0  # a worker retries an unavailable store at least this often


def prune_task(state: RelayState) -> None:
    cutoff = state.clock.now() - state.config.retention_days * 86400
    counts = prune(state.store, older_than=cutoff)
    if any(counts.values()):
        log.info("pruned rows older than %.1f days: %s", state.config.retention_days, counts)


PERIODIC_TASKS: dict[str, tuple[str, float | None]] = {
    # interval None = the worker config's prune_interval_seconds
    "prune": ("relay.worker:prune_task", None),
    # issue 7: sweepers (relay/sweepers.py)
    "callback_timeouts": ("relay.sweepers:timeouts_task", 60.0),
    "redeliver_failed_webhooks": ("relay.sweepers:redeliver_task", 300.0),
    "poll_tags": ("relay.sweepers:tags_task", 600.0),
    # issue 13: retention of per-test results (extra.results.retention_days)
    "prune_test_results": ("relay.results.prune:prune_task", 3600.0),
}


def _given_up(attempts: int, failing_for: float, error: Exception) -> str:
    return f"after {attempts} attempts over {failing_for / 3600:.1f} h: {error}"


def load_handlers(state: RelayState) -> dict[str, JobHandler]:
    handlers: dict[str, JobHandler] = {}
    for dotted in HANDLER_FACTORIES:
        module_name, _, attr = dotted.partition(":")
        handlers.update(getattr(importlib.import_module(module_name), attr)(state))
    return handlers


class Worker:
    def __init__(
        self,
        state: RelayState,
        *,
        handlers: dict[str, JobHandler] | None = None,
        owner: str | None = None,
    ) -> None:
        self.state = state
        self.handlers = handlers if handlers is not None else load_handlers(state)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        cfg = state.config.worker
        self.policy = RetryPolicy(
            cfg.max_attempts,
            cfg.backoff_base_seconds,
            cfg.backoff_max_seconds,
            cfg.retry_window_seconds,
        )
        self._next_run: dict[str, float] = {}

    def _priority_groups(self) -> list[list[str]]:
        """Results before new triggers: every other kind first, then TRIGGER_KINDS."""
        results = [k for k in self.handlers if k not in TRIGGER_KINDS]
        triggers = [k for k in self.handlers if k in TRIGGER_KINDS]
        return [group for group in (results, triggers) if group]

    def run_once(self, limit: int = 1) -> int:
        """Claim and process up to `limit` ready jobs; return how many were processed."""
        cfg = self.state.config.worker
        jobs: list[Job] = []
        for kinds in self._priority_groups():
            jobs = claim(
                self.state.store,
                owner=self.owner,
                kinds=kinds,
                now=self.state.clock.now(),
                lease_seconds=cfg.lease_seconds,
                limit=limit,
            )
            if jobs:
                break
        for job in jobs:
            self.process(job)
        return len(jobs)

    def process(self, job: Job) -> None:
        extra = {
            "delivery_id": job.delivery_id,
            "job_id": job.job_id,
            "target": job.target,
            "kind": job.kind,
            "attempt": job.attempts,
        }
        metrics = self.state.metrics
        try:
            record = self.handlers[job.kind](job)
        except Deferred as exc:
            until = self.state.clock.now() + exc.seconds
            defer(self.state.store, job, owner=self.owner, until=until)
            log.info("job deferred %.1f s: %s", exc.seconds, exc, extra=extra)
            return
        except PermanentError as exc:
            self._dead(job, str(exc), extra)
            return
        except Exception as exc:  # the loop boundary: every failure becomes data
            headers = exc.headers if isinstance(exc, RetryableError) else {}
            if not isinstance(exc, RetryableError):
                log.exception("job handler crashed", extra=extra)
            now = self.state.clock.now()
            failing_for = now - (job.first_failed_at if job.first_failed_at is not None else now)
            if self.policy.exhausted(job.attempts, failing_for):
                self._dead(job, _given_up(job.attempts, failing_for, exc), extra)
                return
            retry_later(
                self.state.store,
                job,
                owner=self.owner,
                error=str(exc),
                now=now,
                next_attempt_at=next_attempt_at(self.policy, job.attempts, now, headers),
            )
            metrics.job_attempts.labels(job.kind, "retry").inc()
            log.warning("job failed, will retry: %s", exc, extra=extra)
            return
        now = self.state.clock.now()
        if complete(self.state.store, job, owner=self.owner, now=now, also=record):
            metrics.job_attempts.labels(job.kind, "ok").inc()
            metrics.dispatch_latency.labels(job.kind).observe(max(0.0, now - job.created_at))
            log.info("job done", extra=extra)
        else:
            log.warning("job done but its lease was lost to another worker", extra=extra)

    def _dead(self, job: Job, error: str, extra: Mapping[str, object]) -> None:
        dead_letter(
            self.state.store, job, owner=self.owner, error=error, now=self.state.clock.now()
        )
        self.state.metrics.job_attempts.labels(job.kind, "dead").inc()
        log.error("job dead-lettered: %s", error, extra=extra)

    def run_periodic(self) -> None:
        now = self.state.clock.now()
        for name, (dotted, interval) in PERIODIC_TASKS.items():
            if now < self._next_run.get(name, 0.0):
                continue
            self._next_run[name] = now + (
                interval or self.state.config.worker.prune_interval_seconds
            )
            module_name, _, attr = dotted.partition(":")
            try:
                getattr(importlib.import_module(module_name), attr)(self.state)
            except StoreUnavailable as exc:
                self.state.store_outage.failed(exc)
            except Exception:
                log.exception("periodic task %s failed", name)

    def _loop(self, stop: threading.Event) -> None:
        poll = self.state.config.worker.poll_interval_seconds
        failures = 0  # consecutive store failures of this thread: back off
        while not stop.is_set():
            wait = poll
            try:
                busy = self.run_once()
                self.state.store_outage.ok()
                failures = 0
            except StoreUnavailable as exc:
                self.state.store_outage.failed(exc)
                failures += 1
                wait = min(STORE_BACKOFF_MAX_SECONDS, max(poll, 0.5) * 2 ** min(failures, 10))
                busy = 0
            except Exception:
                log.exception("worker loop error")
                busy = 0
            if not busy:
                stop.wait(wait)

    def run(self, stop: threading.Event) -> None:
        """Run `concurrency` claiming threads and the periodic tasks until `stop` is set."""
        threads = [
            threading.Thread(target=self._loop, args=(stop,), name=f"relay-worker-{i}", daemon=True)
            for i in range(self.state.config.worker.concurrency)
        ]
        for t in threads:
            t.start()
        log.info("worker %s started with %d thread(s)", self.owner, len(threads))
        while not stop.is_set():
            self.run_periodic()
            stop.wait(1.0)
        for t in threads:
            t.join(timeout=self.state.config.worker.lease_seconds)
