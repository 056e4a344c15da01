"""The same loop with the relay as it is deployed: `spyre-ci relay serve --with-worker`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx

from relay.config import load_config
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_records import wait_for_recorded_dispatches
from tests.support.relay_server import RelayServer, fixture_body, post_webhook, served_relay_config
from tests.support.results_loop import ALLOWLIST, fixture_payload, workflow_report


def _wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "timed out waiting for the relay"
        time.sleep(0.05)


def test_served_relay_with_worker_runs_the_whole_loop(
    tmp_path: Path,
    github: FakeGitHub,
    results_api: FakeResultsAPI,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    config = served_relay_config(
        tmp_path,
        ALLOWLIST,
        github_url=github.url,
        oidc_url=oidc.url,
        callbacks=hud.callback_settings(),
    )
    store_url = load_config(config, {}).store_url
    with RelayServer(config, with_worker=True) as relay:
        assert (
            post_webhook(relay.url, "pull_request", fixture_body("pull_request.opened")).status_code
            == 202
        )
        _wait_for(lambda: any(d.repo == "acme/l4" for d in github.dispatches))
        payload = next(d.client_payload for d in github.dispatches if d.repo == "acme/l4")
        # GitHub's 204 comes before the worker's commit: wait for the relay's own record,
        # or the callback may be answered 503 "is being recorded".
        wait_for_recorded_dispatches(store_url, {(payload["delivery_id"], "acme/l4")})
        headers = {"Authorization": f"Bearer {oidc.github_actions_token('acme/l4')}"}
        for status in ("in_progress", "completed"):
            body = {**payload, "workflow": workflow_report(status=status)}
            answer = httpx.post(
                f"{relay.url}/github/callback", json=body, headers=headers, timeout=10
            )
            assert answer.status_code == 200, answer.text
        _wait_for(lambda: any(r.get("status") == "completed" for r in results_api.check_runs))
        _wait_for(
            lambda: any(
                r["untrusted"]["callback_payload"]["workflow"]["status"] == "completed"
                for r in hud.rows.values()
            )
        )
    check = results_api.check_runs[-1]
    assert check["name"] == "crcr/acme/l4/spyre-ci/test (1/2)"
    assert (
        check["head_sha"] == fixture_payload("pull_request.opened")["pull_request"]["head"]["sha"]
    )
