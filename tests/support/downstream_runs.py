"""Downstream runs the way GitHub Actions would start them, for the relay's loop tests.

`DownstreamRuns` watches the fake GitHub: every `repository_dispatch` it accepted starts
one run (a new run id), in a thread pool. The run's first step claims the dispatch
(`POST /github/claim`); a claimed run reports `in_progress` then `completed` for its one
job, a run told "duplicate" stops there, as `spyre-ci ci claim` and upstream-dispatch.yml
do. Every request is retried until the relay gives a final answer (the relay may be
killed and restarted meanwhile; a 503 means the dispatch is still being recorded).

    with DownstreamRuns(relay_url, github, oidc) as runs:
        ...                                  # dispatches happen
        runs.wait_idle(timeout=60)
        runs.outcomes()                      # [RunOutcome(...)] one per started run
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.fake_github import Dispatch, FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import workflow_report

JOB = "test"
RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})


@dataclass
class RunOutcome:
    repo: str
    delivery_id: str
    run_id: int
    claim: str = ""  # claimed | duplicate | <error>
    reported: list[int] = field(default_factory=list)  # the callbacks' HTTP statuses


class DownstreamRuns:
    def __init__(
        self,
        relay_url: str,
        github: FakeGitHub,
        oidc: FakeOidcIssuer,
        *,
        patience: float = 120.0,
        workers: int = 6,
    ) -> None:
        self.relay_url = relay_url
        self.github = github
        self.oidc = oidc
        self.patience = patience
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="downstream")
        self._futures: list[Future[RunOutcome]] = []
        self._seen = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="downstream-watch", daemon=True)
        self._local = threading.local()
        self._clients: list[httpx.Client] = []

    def __enter__(self) -> DownstreamRuns:
        self._watcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._watcher.join(timeout=5)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for client in self._clients:
            client.close()

    def _watch(self) -> None:
        while not self._stop.is_set():
            new = self.github.dispatches_since(self._seen)
            # the runs are started before they count as seen: wait_idle must never see a
            # dispatch as seen whose run is not in the list yet
            futures = [
                self._pool.submit(self._run, dispatch, 50_000 + len(self._futures) + i)
                for i, dispatch in enumerate(new)
            ]
            with self._lock:
                self._futures.extend(futures)
                self._seen += len(new)
            time.sleep(0.05)

    def wait_idle(self, timeout: float) -> bool:
        """Every started run has finished (True), or `timeout` passed (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                futures = list(self._futures)
                seen = self._seen
            with self.github.lock:
                caught_up = seen == len(self.github.dispatches)
            if caught_up and all(f.done() for f in futures):
                return True
            time.sleep(0.1)
        return False

    def state(self) -> str:
        """Dispatches seen / recorded, runs started / finished (for failure messages)."""
        with self._lock:
            futures, seen = list(self._futures), self._seen
        with self.github.lock:
            recorded = len(self.github.dispatches)
        done = sum(1 for f in futures if f.done())
        return f"seen {seen} of {recorded} dispatches, {done} of {len(futures)} runs finished"

    def outcomes(self, timeout: float = 30.0) -> list[RunOutcome]:
        """One outcome per started run, waiting (up to `timeout`) for runs still going: a
        run that has not finished is a run too, never silently left out."""
        with self._lock:
            futures = list(self._futures)
        deadline = time.monotonic() + timeout
        return [f.result(timeout=max(0.0, deadline - time.monotonic())) for f in futures]

    # -- one run -----------------------------------------------------------
    def _http(self) -> httpx.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = httpx.Client(timeout=10)
            self._clients.append(client)
        assert isinstance(client, httpx.Client)
        return client

    def _run(self, dispatch: Dispatch, run_id: int) -> RunOutcome:
        payload = dispatch.client_payload
        outcome = RunOutcome(dispatch.repo, str(payload.get("delivery_id")), run_id)
        run = {"name": "spyre-ci", "run_id": str(run_id), "run_attempt": "1", "job_name": JOB}
        claimed = self._post(dispatch.repo, "/github/claim", {**payload, "workflow": run})
        if claimed is None or claimed.status_code != 200:
            shown = "no answer" if claimed is None else f"{claimed.status_code} {claimed.text}"
            outcome.claim = f"claim failed: {shown}"
            return outcome
        outcome.claim = str(claimed.json().get("status"))
        if outcome.claim != "claimed":
            return outcome
        for status in ("in_progress", "completed"):
            # Each run's job has its own check run id, as on GitHub: a second result of
            # the same job would be a second HUD row, not an overwrite.
            workflow = workflow_report(
                status=status, run_id=run_id, job_name=JOB, check_run_id=run_id
            )
            answer = self._post(
                dispatch.repo, "/github/callback", {**payload, "workflow": workflow}
            )
            outcome.reported.append(0 if answer is None else answer.status_code)
        return outcome

    def _post(self, repo: str, path: str, body: dict[str, Any]) -> httpx.Response | None:
        """The final answer (2xx or 4xx), or None when the relay gave none in time."""
        deadline = time.monotonic() + self.patience
        while time.monotonic() < deadline:
            headers = {"Authorization": f"Bearer {self.oidc.github_actions_token(repo)}"}
            try:
                answer = self._http().post(f"{self.relay_url}{path}", json=body, headers=headers)
            except httpx.HTTPError:
                answer = None
            if answer is not None and answer.status_code not in RETRYABLE:
                return answer
            time.sleep(0.2)
        return None
