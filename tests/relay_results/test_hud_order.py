"""The HUD keeps the last write of a row: an older state that lands last must not stay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay.worker import Worker
from tests.support.fake_github import FakeGitHub
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop

REPO, JOB = "acme/l2", "test (1/3)"


def _status(body: dict[str, Any]) -> str:
    return str(body["untrusted"]["callback_payload"]["workflow"]["status"])


def test_an_older_state_landing_last_is_overwritten_with_the_current_one(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer, hud: FakeHud
) -> None:
    """One worker forwards `in_progress`; while that write is in flight the job completes
    and a second worker forwards `completed`, which reaches the HUD first. The first worker
    must not leave its older state as the row's last write."""
    with ResultsLoop(tmp_path, github, oidc, callbacks=hud.callback_settings()) as loop:
        delivery = loop.webhook("pull_request.opened")
        loop.drain()
        payload = loop.client_payload(delivery, REPO)
        other_worker = Worker(loop.state)
        overtaken: list[str] = []

        def complete_meanwhile(body: dict[str, Any]) -> None:
            if _status(body) != "in_progress" or overtaken:
                return
            overtaken.append(_status(body))
            answer = loop.callback(REPO, payload, status="completed", job_name=JOB)
            assert answer.status_code == 200, answer.text
            assert other_worker.run_once(limit=20) >= 1  # forwards `completed` first

        hud.before_store = complete_meanwhile
        answer = loop.callback(REPO, payload, status="in_progress", job_name=JOB)
        assert answer.status_code == 200, answer.text
        loop.drain()
    assert overtaken == ["in_progress"]  # the race did happen
    assert [_status(p) for p in hud.posts] == ["completed", "in_progress", "completed"]
    [row] = hud.rows.values()
    assert _status(row) == "completed"
