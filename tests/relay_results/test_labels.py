"""L3 check runs follow the ciflow/crcr/<device> label, whenever it is added."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop, fixture_payload

L3_CHECK = "crcr/acme/l3/spyre-ci/test (1/2)"
LABEL = "ciflow/crcr/spyre"


def _label_event(loop: ResultsLoop, label: str, action: str = "labeled") -> None:
    on_pr = ["bug", label] if action == "labeled" else ["bug"]
    payload = fixture_payload("pull_request.labeled", labels=on_pr)
    payload["action"] = action
    payload["label"] = {"name": label}
    loop.webhook("pull_request.labeled", payload)
    loop.drain()


def _open_labelled_pr(loop: ResultsLoop) -> dict[str, Any]:
    """A PR opened with the device's label already on it; the L3 repo's client payload."""
    return loop.open_pr("acme/l3", fixture_payload("pull_request.opened", labels=[LABEL]))


def _statuses(results_api: FakeResultsAPI) -> list[str]:
    return [r["status"] for r in results_api.check_runs_named(L3_CHECK)]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def loop(
    request: pytest.FixtureRequest, tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> Iterator[ResultsLoop]:
    """Both dialects: PostgreSQL takes row locks between a callback and a label backfill."""
    store_url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    with ResultsLoop(tmp_path, github, oidc, store_url=store_url) as running:
        yield running


def test_without_the_label_an_l3_job_gets_no_check_run(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    payload = loop.open_pr("acme/l3")
    loop.callback("acme/l3", payload, status="in_progress")
    loop.callback("acme/l3", payload, status="completed")
    _label_event(loop, "ciflow/crcr/other-device")
    assert _statuses(results_api) == []


def test_label_added_while_the_job_runs_backfills_and_follows(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    payload = loop.open_pr("acme/l3")
    assert loop.callback("acme/l3", payload, status="in_progress").status_code == 200
    loop.drain()
    assert _statuses(results_api) == []
    _label_event(loop, "ciflow/crcr/spyre")
    assert _statuses(results_api) == ["in_progress"]
    assert loop.callback("acme/l3", payload, status="completed").status_code == 200
    loop.drain()
    assert _statuses(results_api) == ["in_progress", "completed"]


def test_label_added_after_the_job_finished_creates_the_final_check_run(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    payload = loop.open_pr("acme/l3")
    loop.callback("acme/l3", payload, status="in_progress")
    loop.callback("acme/l3", payload, status="completed", conclusion="failure")
    loop.drain()
    _label_event(loop, "ciflow/crcr/spyre")
    _label_event(loop, "ciflow/crcr/spyre")  # labelled twice (two deliveries): one check run
    runs = results_api.check_runs_named(L3_CHECK)
    assert [(r["status"], r.get("conclusion")) for r in runs] == [("completed", "failure")]


def test_label_present_at_dispatch_reports_every_state(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    payload = _open_labelled_pr(loop)
    loop.callback("acme/l3", payload, status="in_progress")
    loop.drain()
    loop.callback("acme/l3", payload, status="completed")
    loop.drain()
    assert _statuses(results_api) == ["in_progress", "completed"]


def test_label_removed_while_the_job_runs_stops_its_check_runs(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    payload = _open_labelled_pr(loop)
    loop.callback("acme/l3", payload, status="in_progress")
    loop.drain()
    _label_event(loop, "ciflow/crcr/spyre", action="unlabeled")
    loop.callback("acme/l3", payload, status="completed")
    loop.drain()
    assert _statuses(results_api) == ["in_progress"]  # the completed state is not reported


def test_label_removed_then_added_again_reports_the_newest_state(
    loop: ResultsLoop, results_api: FakeResultsAPI
) -> None:
    payload = _open_labelled_pr(loop)
    _label_event(loop, "ciflow/crcr/spyre", action="unlabeled")
    loop.callback("acme/l3", payload, status="in_progress")
    loop.callback("acme/l3", payload, status="completed", conclusion="success")
    loop.drain()
    assert _statuses(results_api) == []
    _label_event(loop, "ciflow/crcr/spyre")
    runs = results_api.check_runs_named(L3_CHECK)
    assert [(r["status"], r.get("conclusion")) for r in runs] == [("completed", "success")]
