"""The full loop on loopback: webhook -> dispatch -> in_progress -> completed -> HUD -> check run."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


def test_every_level_through_the_whole_loop(
    tmp_path: Path,
    github: FakeGitHub,
    results_api: FakeResultsAPI,
    oidc: FakeOidcIssuer,
    hud: FakeHud,
) -> None:
    callbacks = {"hud_url": hud.url, "hud_key": "hud-key"}
    with ResultsLoop(tmp_path, github, oidc, callbacks=callbacks) as loop:
        delivery = loop.webhook("pull_request.opened")
        loop.drain()
        for repo in ("acme/l1", "acme/l2", "acme/l3", "acme/l4"):
            payload = loop.client_payload(delivery, repo)
            assert payload["callback_token"].startswith("crt1.")
            started = loop.callback(repo, payload, status="in_progress")
            assert started.status_code == 200, started.text
            loop.clock.advance(120)
            done = loop.callback(repo, payload, status="completed")
            assert done.status_code == 200, done.text
        loop.drain()
    print(hud.rows.keys(), results_api.check_runs)
