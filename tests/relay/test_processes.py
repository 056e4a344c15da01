"""The shipped commands as processes: `relay serve --with-worker` and `relay worker --metrics-port`."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.support.fake_github import FakeGitHub
from tests.support.relay_server import (
    RelayServer,
    RelayWorker,
    fixture_body,
    free_port,
    post_webhook,
    write_relay_config,
)


def _wait_for(condition, timeout: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _config(tmp_path: Path, fake: FakeGitHub, **fields: object) -> Path:
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L2:\n  - org/down\n")
    return write_relay_config(
        tmp_path,
        allowlist={"source": str(allowlist)},
        github={
            "api_url": fake.url,
            "app_id": fake.app_id,
            "private_key_path": str(tmp_path / "app.pem"),
            "min_write_interval_seconds": 0,
        },
        worker={"poll_interval_seconds": 0.05},
        **fields,
    )


def test_serve_with_worker_is_the_whole_embedded_relay(
    tmp_path: Path, fake_github: FakeGitHub
) -> None:
    (tmp_path / "app.pem").write_text(fake_github.private_key_pem)
    with RelayServer(_config(tmp_path, fake_github), with_worker=True) as relay:
        assert (
            post_webhook(
                relay.url, "pull_request", fixture_body("pull_request.opened"), delivery_id="p1"
            ).status_code
            == 202
        )
        assert _wait_for(lambda: fake_github.dispatched_pairs() == [("p1", "org/down")]), (
            relay.log()
        )
        # GitHub has the dispatch; the worker counts it once it has committed the 204.
        counted = 'relay_job_attempts_total{kind="dispatch",result="ok"} 1.0'
        assert _wait_for(lambda: counted in httpx.get(f"{relay.url}/metrics").text), relay.log()
    # App auth from the key file: the dispatch carried org/down's installation token.
    [sent] = fake_github.dispatches
    assert fake_github.installation_tokens[sent.token][0] == "org/down"


def test_a_separate_worker_serves_its_own_metrics(tmp_path: Path, fake_github: FakeGitHub) -> None:
    (tmp_path / "app.pem").write_text(fake_github.private_key_pem)
    config = _config(tmp_path, fake_github)
    port = free_port()
    worker = RelayWorker(config)
    worker.args += ["--metrics-port", str(port)]
    with RelayServer(config) as relay, worker:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="w1")
        assert _wait_for(lambda: len(fake_github.dispatches) == 1), worker.log()

        def counted() -> bool:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
            except httpx.HTTPError:
                return False
            return 'relay_job_attempts_total{kind="dispatch",result="ok"} 1.0' in text

        assert _wait_for(counted), worker.log()
