"""`plan_event`: run or skip, and what to compare, for every event the workflow gets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from spyre_ci.ci.plan import BadEvent, Plan, plan_event
from tests.ci.conftest import dispatch_event

Webhook = Callable[[str], dict[str, Any]]


@pytest.mark.parametrize("action", ["opened", "reopened", "synchronize"])
def test_open_pr_runs_on_its_head_against_its_base(webhook: Webhook, action: str) -> None:
    payload = webhook(f"pull_request.{action}")
    plan = plan_event("repository_dispatch", dispatch_event("pull_request", payload, "del-7"))
    assert plan.run
    assert plan.event_type == "pull_request"
    assert plan.delivery_id == "del-7"
    assert plan.upstream_repo == "Codertocat/Hello-World"
    assert plan.head_sha == payload["pull_request"]["head"]["sha"]
    assert plan.base_sha == payload["pull_request"]["base"]["sha"]
    assert plan.base_ref == "master"
    assert plan.pr_number == 2
    assert plan.labels == ["bug"]
    assert plan.concurrency_key == "pr-2"


def test_pr_closed_without_merge_stops_early(webhook: Webhook) -> None:
    payload = webhook("pull_request.closed")
    assert payload["pull_request"]["merged"] is False
    plan = plan_event("repository_dispatch", dispatch_event("pull_request", payload))
    assert not plan.run
    assert plan.reason == "PR #2 was closed without being merged"
    assert not plan.merged


def test_pr_closed_by_the_merge_bot_with_the_merged_label_counts_as_merged(
    webhook: Webhook,
) -> None:
    payload = webhook("pull_request.closed")
    payload["pull_request"]["labels"].append({"name": "Merged", "color": "ffffff"})
    plan = plan_event("repository_dispatch", dispatch_event("pull_request", payload))
    assert plan.run and plan.merged
    assert plan.labels == ["bug", "Merged"]
    assert "merged" in plan.reason


def test_pr_merged_by_github_counts_as_merged(webhook: Webhook) -> None:
    payload = webhook("pull_request.closed")
    payload["pull_request"]["merged"] = True
    assert plan_event("repository_dispatch", dispatch_event("pull_request", payload)).run


def test_merged_label_on_an_open_pr_is_not_a_merge(webhook: Webhook) -> None:
    payload = webhook("pull_request.synchronize")
    payload["pull_request"]["labels"].append({"name": "Merged"})
    assert not plan_event("repository_dispatch", dispatch_event("pull_request", payload)).merged


def test_labeled_pr_is_not_tested(webhook: Webhook) -> None:
    plan = plan_event(
        "repository_dispatch", dispatch_event("pull_request", webhook("pull_request.labeled"))
    )
    assert not plan.run
    assert plan.reason == "pull_request action 'labeled' is not tested"


def test_deleted_ref_push_is_skipped(webhook: Webhook) -> None:
    payload = webhook("push")
    assert payload["deleted"] is True
    plan = plan_event("repository_dispatch", dispatch_event("push", payload))
    assert not plan.run
    assert plan.reason == "refs/tags/simple-tag was deleted: nothing to test"


def test_new_branch_push_has_no_base_and_runs_the_full_tier(webhook: Webhook) -> None:
    payload = webhook("push.with-new-branch")
    plan = plan_event("repository_dispatch", dispatch_event("push", payload))
    assert plan.run
    assert (plan.head_sha, plan.base_sha, plan.tier) == (payload["after"], "", "full")


def test_push_to_a_branch_compares_before_and_after(webhook: Webhook) -> None:
    payload = webhook("push.with-new-branch")
    payload["before"] = "a" * 40
    plan = plan_event("repository_dispatch", dispatch_event("push", payload))
    assert plan.run and plan.tier == "selected"
    assert (plan.base_sha, plan.head_sha) == ("a" * 40, payload["after"])
    assert plan.pr_number is None


def test_non_release_tag_push_is_skipped(webhook: Webhook) -> None:
    payload = webhook("push.with-new-branch")
    payload["ref"] = "refs/tags/ciflow/trunk/123"
    plan = plan_event("repository_dispatch", dispatch_event("push", payload))
    assert not plan.run
    assert "not a release tag" in plan.reason


def test_unknown_dispatch_event_type_is_skipped_with_its_name(webhook: Webhook) -> None:
    plan = plan_event("repository_dispatch", dispatch_event("check_run", webhook("push")))
    assert not plan.run
    assert "'check_run'" in plan.reason


def test_dispatch_without_crcr_fields_names_the_missing_field(webhook: Webhook) -> None:
    # GitHub's own example dispatch: a client_payload that is not the relay's.
    event = webhook("repository_dispatch")
    with pytest.raises(BadEvent, match=r"client_payload\.event_type"):
        plan_event("repository_dispatch", event)


def test_pr_payload_without_head_sha_names_the_field(webhook: Webhook) -> None:
    payload = webhook("pull_request.opened")
    del payload["pull_request"]["head"]["sha"]
    with pytest.raises(BadEvent, match=r"client_payload\.payload\.pull_request\.head\.sha"):
        plan_event("repository_dispatch", dispatch_event("pull_request", payload))


def test_manual_range_compares_the_two_ends() -> None:
    event = {"inputs": {"pytorch_ref": "v2.13.0..v2.14.0", "tier": "selected"}}
    plan = plan_event("workflow_dispatch", event, run_id="99")
    assert (plan.base_sha, plan.head_sha, plan.delivery_id) == ("v2.13.0", "v2.14.0", "manual-99")


def test_manual_single_sha_compares_with_its_parent() -> None:
    plan = plan_event("workflow_dispatch", {"inputs": {"pytorch_ref": "abc123"}}, run_id="5")
    assert (plan.base_sha, plan.head_sha, plan.tier) == ("abc123^", "abc123", "selected")


def test_manual_full_tier_has_no_base_and_unknown_tier_is_an_error() -> None:
    plan = plan_event("workflow_dispatch", {"inputs": {"pytorch_ref": "main", "tier": "full"}})
    assert plan.base_sha == "" and plan.tier == "full"
    with pytest.raises(BadEvent, match=r"inputs\.tier"):
        plan_event("workflow_dispatch", {"inputs": {"tier": "everything"}})


def test_nightly_runs_upstream_main_in_full() -> None:
    plan = plan_event("schedule", {"schedule": "17 3 * * *"}, run_id="3")
    assert plan.run and plan.event_type == "nightly"
    assert (plan.head_sha, plan.base_sha, plan.tier) == ("main", "", "full")


def test_unhandled_workflow_event_is_an_error() -> None:
    with pytest.raises(BadEvent, match="'push' is not handled"):
        plan_event("push", {})


def test_outputs_and_json_round_trip(webhook: Webhook) -> None:
    plan = plan_event(
        "repository_dispatch", dispatch_event("pull_request", webhook("pull_request.opened"))
    )
    outputs = plan.outputs()
    assert outputs["run"] == "true" and outputs["pr_number"] == "2"
    assert outputs["merged"] == "false"
    assert Plan.from_json(plan.to_json()) == plan
