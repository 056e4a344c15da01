"""`spyre-ci relay sweep`: the sweepers on demand, against the configured store."""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from click.testing import CliRunner

from spyre_ci.cli import cli
from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import TEST_SECRET
from tests.support.results_loop import UPSTREAM, ResultsLoop


def test_sweep_times_out_a_job_stuck_since_yesterday(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    store_url = f"sqlite:///{tmp_path / 'relay.db'}"
    yesterday = time.time() - 86400
    with ResultsLoop(tmp_path, github, oidc, store_url=store_url, clock_start=yesterday) as loop:
        payload = loop.open_pr("acme/l2")
        assert loop.callback("acme/l2", payload, status="in_progress").status_code == 200
    config = tmp_path / "relay.yaml"
    config.write_text(
        yaml.safe_dump(
            {"upstream_repo": UPSTREAM, "webhook_secrets": [TEST_SECRET], "store_url": store_url}
        )
    )
    first = CliRunner().invoke(cli, ["relay", "sweep", "--config", str(config)])
    again = CliRunner().invoke(cli, ["relay", "sweep", "--config", str(config)])
    assert first.exit_code == 0, first.output
    assert first.output.strip() == "timed out: 1 job(s)"
    assert again.output.strip() == "timed out: 0 job(s)"


def test_sweep_names_a_bad_setting(tmp_path: Path) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "webhook_secrets": [TEST_SECRET],
                "store_url": f"sqlite:///{tmp_path / 'relay.db'}",
                "extra": {"callbacks": {"in_progress_timeout_seconds": -1}},
            }
        )
    )
    result = CliRunner().invoke(cli, ["relay", "sweep", "--config", str(config)])
    assert result.exit_code != 0
    assert "extra.callbacks.in_progress_timeout_seconds" in result.output
