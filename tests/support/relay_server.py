"""Launch the real relay (`spyre-ci relay serve` / `worker`) as subprocesses on a free port.

    config = write_relay_config(tmp_path, store_url=..., github={"api_url": fake.url, "token": "test-token"})
    with RelayServer(config, with_worker=True) as relay:
        post_webhook(relay.url, "pull_request", body, secret=TEST_SECRET)

`RelayServer.kill()` sends SIGKILL (crash tests); `start()` again restarts on the
same port. `RelayWorker` runs `spyre-ci relay worker` alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import yaml

from relay.webhook.signature import sign
from tests.support.served import UvicornThread, free_port

if TYPE_CHECKING:
    from relay.worker import Worker

TEST_SECRET = "test-webhook-secret"
FIXTURES = Path(
    os.environ.get(
        "SPYRE_CI_WEBHOOK_FIXTURES",
        Path(__file__).resolve().parents[1] / "fixtures" / "github-webhooks",
    )
)


def write_relay_config(directory: Path, **fields: Any) -> Path:
    """Write a relay YAML config (defaults: test secret, SQLite in `directory`)."""
    data: dict[str, Any] = {
        "upstream_repo": "Codertocat/Hello-World",
        "webhook_secrets": [TEST_SECRET],
        "store_url": f"sqlite:///{directory / 'relay.db'}",
        **fields,
    }
    path = directory / f"relay-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def served_relay_config(
    directory: Path,
    allowlist: str,
    *,
    github_url: str,
    oidc_url: str,
    callbacks: dict[str, Any] | None = None,
    poll_interval_seconds: float = 0.05,
    github: dict[str, Any] | None = None,
    **fields: Any,
) -> Path:
    """Config of a relay served with its worker against the fake GitHub (token auth, no
    pacing) and the fake OIDC issuer; `allowlist` is written next to it, `callbacks` adds
    callback settings, `github` GitHub settings and `fields` further top-level keys."""
    allowlist_path = directory / "allowlist.yml"
    allowlist_path.write_text(allowlist, encoding="utf-8")
    issuers = [{"kind": "github_actions", "issuer": oidc_url}]
    return write_relay_config(
        directory,
        allowlist={"source": str(allowlist_path)},
        github={
            "api_url": github_url,
            "token": "test-token",
            "min_write_interval_seconds": 0,
            **(github or {}),
        },
        worker={"poll_interval_seconds": poll_interval_seconds},
        extra={"callbacks": {"oidc_issuers": issuers, **(callbacks or {})}},
        **fields,
    )


def signed_headers(
    event: str, body: bytes, *, secret: str = TEST_SECRET, delivery_id: str | None = None
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(body, secret.encode()),
        "User-Agent": "GitHub-Hookshot/test",
    }


def post_webhook(
    url: str,
    event: str,
    body: bytes,
    *,
    secret: str = TEST_SECRET,
    delivery_id: str | None = None,
    client: httpx.Client | None = None,
) -> httpx.Response:
    headers = signed_headers(event, body, secret=secret, delivery_id=delivery_id)
    if client is not None:
        return client.post(f"{url}/github/webhook", content=body, headers=headers)
    return httpx.post(f"{url}/github/webhook", content=body, headers=headers, timeout=10)


def fixture_body(name: str) -> bytes:
    """The raw bytes of a real webhook payload from tests/fixtures/github-webhooks/."""
    return (FIXTURES / f"{name}.payload.json").read_bytes()


class _Process:
    args: list[str]

    def __init__(
        self, config: Path, log_dir: Path | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.config = config
        self.log_path = (
            log_dir or config.parent
        ) / f"{type(self).__name__}-{uuid.uuid4().hex[:6]}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = env or {}  # added to the process's environment

    def _spawn(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "spyre_ci", "relay", *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no cleanup, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


class RelayServer(_Process):
    def __init__(
        self,
        config: Path,
        *,
        with_worker: bool = False,
        port: int | None = None,
        log_dir: Path | None = None,
        log_level: str = "warning",
        env: dict[str, str] | None = None,
    ) -> None:
        super().__init__(config, log_dir, env)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [
            "serve",
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            log_level,
        ]
        if with_worker:
            self.args.append("--with-worker")

    def start(self, timeout: float = 30.0) -> RelayServer:
        self._spawn()
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"relay server exited with {self.proc.returncode}:\n{self.log()}"
                )
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"relay server did not become healthy in {timeout} s:\n{self.log()}")

    def __enter__(self) -> RelayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RelayWorker(_Process):
    def __init__(self, config: Path, *, log_dir: Path | None = None) -> None:
        super().__init__(config, log_dir)
        self.args = ["worker", "--config", str(config), "--log-level", "info"]

    def start(self) -> RelayWorker:
        self._spawn()
        return self

    def __enter__(self) -> RelayWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class InProcessRelay:
    """`create_app(config)` served by a real uvicorn server in a thread of the test process.

    Faster than a subprocess and lets a test hand in its own store, allowlist or
    clock; `.state` is the app's RelayState. Run a worker with `relay.worker()`.
    """

    def __init__(self, config: Any, **create_app_kwargs: Any) -> None:
        from relay.app import create_app

        self.app = create_app(config, **create_app_kwargs)
        self.state = self.app.state.relay
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._served = UvicornThread(self.app, self.port, "in-process relay")

    def start(self) -> InProcessRelay:
        self._served.start()
        return self

    def worker(self, **kwargs: Any) -> Worker:
        from relay.worker import Worker

        return Worker(self.state, **kwargs)

    def stop(self) -> None:
        self._served.stop()

    def __enter__(self) -> InProcessRelay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
