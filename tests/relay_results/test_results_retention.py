"""Retention of per-test results: old failed-test rows and idle histories go, others stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.config import ConfigError, check_extra
from relay.results.prune import DAY, prune_task
from relay.worker import PERIODIC_TASKS
from tests.relay_results.test_run_reports import (
    REPO,
    TEST_A,
    TEST_B,
    _completed,
    _pr_at,
    run_report,
)
from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.results_loop import ResultsLoop


def test_old_results_are_pruned_and_recent_ones_kept(
    tmp_path: Path, github: FakeGitHub, oidc: FakeOidcIssuer
) -> None:
    assert PERIODIC_TASKS["prune_test_results"][0] == "relay.results.prune:prune_task"
    with ResultsLoop(tmp_path, github, oidc) as loop:
        # extra.results.retention_days: 10, as the relay's YAML would set it
        extra = {**loop.config.extra, "results": {"retention_days": 10}}
        loop.state.config = loop.config.model_copy(update={"extra": extra})
        old = _pr_at(loop, "a" * 40)
        assert loop.callback(REPO, old, status="in_progress").status_code == 200
        assert _completed(loop, old, run_report([TEST_A], [TEST_B])).status_code == 200
        loop.clock.advance(8 * DAY)
        recent = _pr_at(loop, "b" * 40, number=3)
        assert loop.callback(REPO, recent, status="in_progress").status_code == 200
        assert _completed(loop, recent, run_report([TEST_B], [])).status_code == 200
        loop.clock.advance(3 * DAY)  # the first run is 11 days old, the second 3
        prune_task(loop.state)
        failures = loop.rows("SELECT node_id, delivery_id FROM test_failures")
        statuses = loop.rows("SELECT node_id FROM test_status ORDER BY node_id")
    assert failures == [{"node_id": TEST_B, "delivery_id": recent["delivery_id"]}]
    # test A was last reported 11 days ago: its history went; B ran 3 days ago
    assert [s["node_id"] for s in statuses] == [TEST_B]


def test_retention_is_validated_with_the_field_named() -> None:
    check_extra({"results": {"retention_days": 14, "history_length": 30}})
    with pytest.raises(ConfigError, match=r"extra\.results\.retention_days"):
        check_extra({"results": {"retention_days": 0}})
