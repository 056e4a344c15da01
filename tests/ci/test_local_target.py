"""The relay's built-in local target: a real relay (uvicorn, SQLite, worker) dispatches to
`spyre-ci ci run-workflow` on this machine, which calls back with a token from the
relay's own issuer by GitHub Actions' protocol. No fake GitHub anywhere."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jwt
import pytest
import yaml

from relay.allowlist import parse_allowlist
from relay.config import TargetConfig, load_config
from relay.dispatch.targets import targets_for
from relay.local_target import (
    issue_request_token,
    load_or_create_key,
    public_url_port_mismatch,
    request_secret,
    verify_request_token,
)
from relay.state import build_state
from tests.support.relay_server import RelayServer, fixture_body, free_port, post_webhook

LOCAL = "local/spyre-ci"


def test_request_token_is_bound_to_target_and_run_and_expires() -> None:
    token = issue_request_token(b"s" * 32, LOCAL, "123", now=1000.0)
    assert verify_request_token(b"s" * 32, token, now=1001.0) == (LOCAL, "123")
    assert verify_request_token(b"other" * 8, token, now=1001.0) is None  # another relay's secret
    assert verify_request_token(b"s" * 32, token, now=1000.0 + 7 * 3600) is None  # expired
    forged = token.replace(token.split(".")[1], "b3RoZXIvcmVwbw")  # "other/repo"
    assert verify_request_token(b"s" * 32, forged, now=1001.0) is None


def test_allowlisted_local_target_is_dispatched_through_its_own_connection_only() -> None:
    allowlist = parse_allowlist(f"L2:\n  - {LOCAL}\n  - acme/other\n")
    configured = [TargetConfig(name=LOCAL, connection="local", options={"upstream_url": "x"})]
    found = targets_for("pull_request", allowlist, configured)
    assert [(t.name, t.connection, t.level) for t in found] == [
        ("acme/other", "github", "L2"),
        (LOCAL, "local", "L2"),
    ]


def test_signing_key_is_created_once_and_shared(tmp_path: Path) -> None:
    first = load_or_create_key(tmp_path / "k" / "key.pem")
    second = load_or_create_key(tmp_path / "k" / "key.pem")
    assert first.private_numbers() == second.private_numbers()


def _config(tmp_path: Path, port: int, upstream: str) -> Path:
    url = f"http://127.0.0.1:{port}"
    (tmp_path / "allowlist.yml").write_text(f"L2:\n  - {LOCAL}\n")
    config = {
        "upstream_repo": "Codertocat/Hello-World",
        "webhook_secrets": ["test-webhook-secret"],
        "store_url": f"sqlite:///{tmp_path / 'relay.db'}",
        "public_url": url,
        "allowlist": {"source": str(tmp_path / "allowlist.yml")},
        "worker": {"poll_interval_seconds": 0.1},
        "targets": [
            {
                "name": LOCAL,
                "connection": "local",
                "level": "L2",
                "options": {
                    "upstream_url": upstream,
                    "workdir": str(tmp_path / "runs"),
                    "oidc_key_path": str(tmp_path / "local-oidc.pem"),
                },
            }
        ],
        "extra": {
            "callbacks": {
                "oidc_issuers": [{"kind": "github_actions", "issuer": f"{url}/local-oidc"}]
            }
        },
    }
    path = tmp_path / "relay.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_serving_on_another_port_than_public_url_names_is_refused(tmp_path: Path) -> None:
    # The local target calls back at public_url: a relay listening elsewhere would see every
    # run end "not reported", so `relay serve` refuses to start and says what to change.
    config = _config(tmp_path, 8080, str(tmp_path / "upstream"))
    other = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "spyre_ci", "relay", "serve", "--config", str(config),
         "--port", str(other)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"public_url http://127.0.0.1:8080 names port 8080 but the relay serves on {other}" in (
        done.stderr
    )
    assert public_url_port_mismatch(load_config(config), 8080) is None


def _wait_for_job(url: str, number: int, timeout: float = 60.0) -> dict[str, object]:
    deadline = time.time() + timeout
    jobs: list[dict[str, object]] = []
    while time.time() < deadline:
        answer = httpx.get(f"{url}/api/crcr/pr/{number}", timeout=5)
        if answer.status_code == 200:
            jobs = [j for j in _jobs(answer.json()) if j.get("status") == "completed"]
            if jobs:
                return jobs[0]
        time.sleep(0.3)
    raise AssertionError(f"no completed job for PR #{number} within {timeout} s")


def _wait_for_text(path: Path, text: str, timeout: float = 20.0) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        content = path.read_text() if path.exists() else ""
        if text in content:
            return content
        time.sleep(0.2)
    return path.read_text() if path.exists() else ""


def _jobs(page: object) -> list[dict[str, object]]:
    """Every job-like object (has status and conclusion) in a dashboard JSON page."""
    found: list[dict[str, object]] = []
    if isinstance(page, dict):
        if "status" in page and "conclusion" in page:
            found.append(page)
        for value in page.values():
            found.extend(_jobs(value))
    elif isinstance(page, list):
        for value in page:
            found.extend(_jobs(value))
    return found


@pytest.mark.slow
def test_closed_pr_goes_round_the_local_loop_and_is_reported_skipped(tmp_path: Path) -> None:
    port = free_port()
    config = _config(tmp_path, port, upstream=str(tmp_path / "no-upstream-needed"))
    with RelayServer(config, with_worker=True, port=port, log_dir=tmp_path) as relay:
        discovery = httpx.get(f"{relay.url}/local-oidc/.well-known/openid-configuration").json()
        assert discovery["issuer"] == f"{relay.url}/local-oidc"
        assert httpx.get(f"{relay.url}/local-oidc/token?audience=x").status_code == 401
        _assert_issuer_tokens_name_the_target(relay.url, config)

        answer = post_webhook(relay.url, "pull_request", fixture_body("pull_request.closed"))
        assert answer.status_code == 202, answer.text
        job = _wait_for_job(relay.url, 2)
        assert job["conclusion"] == "skipped", job
        run_dir = next((tmp_path / "runs").iterdir())
        event = json.loads((run_dir / "event.json").read_text())
        assert event["client_payload"]["callback_token"].startswith("crt1.")
        log = _wait_for_text(run_dir / "run.log", "conclusion:")  # the run prints it last
        assert "conclusion: skipped" in log, log


def _assert_issuer_tokens_name_the_target(url: str, config: Path) -> None:
    state = build_state(load_config(config))
    # the secret every relay process derives from the webhook secret
    token = issue_request_token(request_secret(state), LOCAL, "77", time.time())
    state.close()
    answer = httpx.get(
        f"{url}/local-oidc/token?api-version=2.0&audience=pytorch-cross-repo-ci-relay",
        headers={"Authorization": f"bearer {token}"},
    )
    assert answer.status_code == 200, answer.text
    jwks = httpx.get(f"{url}/local-oidc/jwks").json()
    key = jwt.PyJWK(jwks["keys"][0], algorithm="RS256").key
    claims = jwt.decode(
        answer.json()["value"], key, algorithms=["RS256"], audience="pytorch-cross-repo-ci-relay"
    )
    assert (claims["repository"], claims["run_id"]) == (LOCAL, "77")
    assert claims["iss"] == f"{url}/local-oidc"
