"""The whole results loop on loopback, for tests of callbacks, check runs and sweepers.

``ResultsLoop`` runs the real relay app (``create_app``) under a real uvicorn
server in a thread, with a real store (SQLite file or PostgreSQL), the fake
GitHub (plus ``FakeResultsAPI``), the fake OIDC issuer, and a manual clock the
test moves. The outbox worker is driven with ``drain()`` so that retries and
timeouts run deterministically.

    loop.webhook("pull_request.opened")            -> delivery id (signed, real endpoint)
    loop.drain()                                    -> runs every ready outbox job
    payload = loop.client_payload(delivery, repo)   -> what GitHub received for that repo
    payload = loop.open_pr(repo)                    -> the three above in one
    loop.callback(repo, payload, status="in_progress")  -> httpx.Response of /github/callback
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from relay.allowlist import parse_allowlist
from relay.allowlist_source import StaticAllowlist
from relay.app import create_app
from relay.clock import ManualClock
from relay.config import RelayConfig
from relay.worker import Worker
from tests.support.fake_github import FakeGitHub, free_port
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import TEST_SECRET, fixture_body, signed_headers

UPSTREAM = "Codertocat/Hello-World"  # the repository of the shared webhook fixtures
ALLOWLIST = """\
L1:
  - acme/l1
L2:
  - acme/l2
L3:
  spyre:
    acme/l3: [oncall-a]
L4:
  - acme/l4: [oncall-b]
"""


class ServedApp:
    """A FastAPI app on a real uvicorn server in a thread (127.0.0.1, free port)."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def start(self) -> ServedApp:
        self._thread.start()
        deadline = time.time() + 10
        while not self._server.started:
            if time.time() > deadline or not self._thread.is_alive():
                raise RuntimeError("relay app did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


class ResultsLoop:
    def __init__(
        self,
        tmp_path: Path,
        github: FakeGitHub,
        oidc: FakeOidcIssuer,
        *,
        callbacks: dict[str, Any] | None = None,
        store_url: str | None = None,
        allowlist: str = ALLOWLIST,
        github_config: dict[str, Any] | None = None,
        targets: list[dict[str, Any]] | None = None,
        clock_start: float | None = None,
        worker: dict[str, Any] | None = None,
    ) -> None:
        self.github = github
        self.oidc = oidc
        self.clock = ManualClock(start=time.time() if clock_start is None else clock_start)
        settings = {
            "oidc_issuers": [{"kind": "github_actions", "issuer": oidc.url}],
            **(callbacks or {}),
        }
        self.config = RelayConfig.model_validate(
            {
                "upstream_repo": UPSTREAM,
                "webhook_secrets": [TEST_SECRET],
                "store_url": store_url
                or f"sqlite:///{tmp_path / f'relay-{uuid.uuid4().hex[:6]}.db'}",
                "github": {
                    "api_url": github.url,
                    "min_write_interval_seconds": 0,
                    **(github_config or {"token": "test-token"}),
                },
                # `worker={}`: the relay's default retry policy (a day of retries).
                "worker": {"backoff_base_seconds": 1.0, "max_attempts": 5}
                if worker is None
                else worker,
                "public_url": "http://relay.test",
                "targets": targets or [],
                "extra": {"callbacks": settings},
            }
        )
        app = create_app(
            self.config, allowlist=StaticAllowlist(parse_allowlist(allowlist)), clock=self.clock
        )
        self.state = app.state.relay
        self.server = ServedApp(app)
        self.url = self.server.url
        self.worker = Worker(self.state)
        self.http = httpx.Client(timeout=10)

    def __enter__(self) -> ResultsLoop:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()
        self.server.stop()

    # -- upstream side ---------------------------------------------------
    def webhook(self, fixture: str, payload: dict[str, Any] | None = None) -> str:
        event = fixture.split(".")[0]
        data = payload if payload is not None else json.loads(fixture_body(fixture))
        body = json.dumps(data).encode()
        delivery_id = str(uuid.uuid4())
        response = self.http.post(
            f"{self.url}/github/webhook",
            content=body,
            headers=signed_headers(event, body, delivery_id=delivery_id),
        )
        assert response.status_code in (200, 202), response.text
        return delivery_id

    def drain(self, rounds: int = 50) -> int:
        """Run ready outbox jobs until none is ready; return how many ran."""
        total = 0
        for _ in range(rounds):
            ran = self.worker.run_once(limit=20)
            total += ran
            if not ran:
                return total
        return total

    def open_pr(self, repo: str, pr: dict[str, Any] | None = None) -> dict[str, Any]:
        """Deliver pull_request.opened (`pr`, or the shared fixture), run the dispatches and
        return the client payload `repo` received."""
        delivery = self.webhook("pull_request.opened", pr)
        self.drain()
        return self.client_payload(delivery, repo)

    # -- downstream side -------------------------------------------------
    def client_payload(self, delivery_id: str, repo: str) -> dict[str, Any]:
        for dispatch in self.github.dispatches:
            if dispatch.repo == repo and dispatch.client_payload.get("delivery_id") == delivery_id:
                return copy.deepcopy(dispatch.client_payload)
        raise AssertionError(f"no dispatch of {delivery_id} to {repo}")

    def callback(
        self,
        repo: str,
        client_payload: dict[str, Any],
        *,
        token: str | None = None,
        extra: dict[str, Any] | None = None,
        **workflow: Any,
    ) -> httpx.Response:
        body = {**client_payload, "workflow": workflow_report(**workflow), **(extra or {})}
        bearer = token if token is not None else self.token(repo)
        return self.http.post(
            f"{self.url}/github/callback",
            json=body,
            headers={"Authorization": f"Bearer {bearer}"},
        )

    def callback_with(
        self,
        http: httpx.Client,
        repo: str,
        client_payload: dict[str, Any],
        *,
        token: str | None = None,
        **workflow: Any,
    ) -> httpx.Response:
        """``callback`` over the caller's own client (threads)."""
        body = {**client_payload, "workflow": workflow_report(**workflow)}
        headers = {"Authorization": f"Bearer {token or self.token(repo)}"}
        return http.post(f"{self.url}/github/callback", json=body, headers=headers)

    def token(self, repo: str) -> str:
        """A GitHub Actions OIDC token for ``repo``, minted at the relay's (manual) time."""
        return self.oidc.github_actions_token(repo, issued_at=self.clock.now())

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self.state.store.transaction(write=False) as tx:
            return tx.fetchall(sql, params)


def workflow_report(**overrides: Any) -> dict[str, Any]:
    status = overrides.get("status", "in_progress")
    report: dict[str, Any] = {
        "schema_version": "1",
        "status": status,
        "name": "spyre-ci",
        "url": "https://github.com/acme/downstream/actions/runs/100",
        "run_id": 100,
        "run_attempt": 1,
        "job_name": "test (1/2)",
        "check_run_id": 9001,
        "started_at": "2026-11-30T04:00:00Z",
    }
    if status == "completed":
        report.update(
            conclusion="success",
            completed_at="2026-11-30T04:20:00Z",
            test_results={"passed": 90, "failed": 0, "skipped": 10, "total": 100},
        )
    report.update(overrides)
    return {k: v for k, v in report.items() if v is not None}


def fixture_payload(name: str, *, labels: list[str] | None = None) -> dict[str, Any]:
    """A shared webhook fixture as a dict; ``labels`` replaces the PR's labels."""
    payload: dict[str, Any] = json.loads(fixture_body(name))
    if labels is not None:
        payload["pull_request"]["labels"] = [{"name": name} for name in labels]
    return payload
