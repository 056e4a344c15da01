"""upstream-dispatch.yml wires `spyre-ci ci` commands together and nothing else."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from spyre_ci.ci.cli import ci_group

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "upstream-dispatch.yml"
# The workflow as YAML 1.1 reads it: the key `on` comes back as the boolean True.
Workflow = dict[str | bool, Any]


@pytest.fixture(scope="module")
def workflow() -> Workflow:
    data: Workflow = yaml.safe_load(WORKFLOW.read_text())
    return data


def _runs(workflow: Workflow) -> list[str]:
    return [
        step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step
    ]


def test_triggers(workflow: Workflow) -> None:
    on = workflow[True]  # YAML 1.1 reads the key `on` as a boolean
    assert on["repository_dispatch"]["types"] == ["pull_request", "push"]
    assert set(on["workflow_dispatch"]["inputs"]) == {"pytorch_ref", "tier"}
    assert on["workflow_dispatch"]["inputs"]["tier"]["options"] == ["selected", "full"]
    assert on["schedule"][0]["cron"]


def test_superseded_pr_runs_are_cancelled_per_upstream_pr(workflow: Workflow) -> None:
    concurrency = workflow["concurrency"]
    assert "client_payload.payload.pull_request.number" in concurrency["group"]
    assert "github.run_id" in concurrency["group"]  # everything else: a group of its own
    assert concurrency["cancel-in-progress"] is True


def test_only_the_claim_and_report_jobs_can_mint_an_oidc_token_and_no_secret_is_used(
    workflow: Workflow,
) -> None:
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    assert jobs["report"]["permissions"] == {
        "contents": "read",
        "actions": "read",  # to wait for the test jobs
        "id-token": "write",
    }
    assert jobs["select"]["permissions"] == {"contents": "read", "id-token": "write"}  # claim
    assert "permissions" not in jobs["test"]
    assert "secrets." not in WORKFLOW.read_text()


def test_a_duplicate_run_stops_after_its_claim_and_reports_nothing(workflow: Workflow) -> None:
    """The relay dispatches at least once: the select job's first step claims the dispatch,
    and a run told `duplicate` plans, tests and reports nothing."""
    select = workflow["jobs"]["select"]
    runs = [step.get("run", "") for step in select["steps"]]
    first = next(i for i, run in enumerate(runs) if run.startswith("spyre-ci ci "))
    assert runs[first] == "spyre-ci ci claim" and select["steps"][first]["id"] == "claim"
    plan = next(step for step in select["steps"] if step.get("id") == "plan")
    assert plan["if"] == "steps.claim.outputs.duplicate != 'true'"
    assert select["outputs"]["duplicate"] == "${{ steps.claim.outputs.duplicate }}"
    # test needs plan's has_tests (empty when planning was skipped); report says so itself
    assert workflow["jobs"]["test"]["if"] == "needs.select.outputs.has_tests == 'true'"
    assert workflow["jobs"]["report"]["if"] == (
        "always() && needs.select.outputs.duplicate != 'true'"
    )


def test_report_job_calls_back_in_progress_first_then_waits_then_completed(
    workflow: Workflow,
) -> None:
    report = workflow["jobs"]["report"]
    # It starts right after select, so that queue time ends when the run starts.
    assert report["needs"] == "select"
    assert report["if"].startswith("always()")
    steps = report["steps"]
    runs = [step.get("run", "") for step in steps]
    started = next(i for i, run in enumerate(runs) if "ci callback --status in_progress" in run)
    waited = next(i for i, run in enumerate(runs) if "ci wait-for-jobs --prefix test" in run)
    completed = next(i for i, run in enumerate(runs) if "ci report" in run)
    assert started < waited < completed
    assert steps[completed]["if"] == "always()"  # also when the run is cancelled
    assert workflow["jobs"]["test"]["name"].startswith("test (")  # what wait-for-jobs matches


def test_jobs_select_then_test_over_the_shard_matrix(workflow: Workflow) -> None:
    jobs = workflow["jobs"]
    assert jobs["test"]["needs"] == "select"
    assert jobs["test"]["strategy"]["matrix"] == "${{ fromJSON(needs.select.outputs.matrix) }}"
    assert jobs["test"]["strategy"]["fail-fast"] is False
    assert "steps.plan.outputs.run == 'true'" in str(jobs["select"]["steps"])


def test_every_run_step_is_a_spyre_ci_command_or_pip(workflow: Workflow) -> None:
    for run in _runs(workflow):
        assert re.match(r"^(spyre-ci ci |pip install )", run.strip()), run
        assert "\n" not in run.strip(), f"logic belongs in spyre-ci ci, not in the YAML: {run}"


def test_every_command_and_option_the_workflow_uses_exists(workflow: Workflow) -> None:
    for run in _runs(workflow):
        words = shlex.split(run)
        if words[:2] != ["spyre-ci", "ci"]:
            continue
        command = ci_group.commands.get(words[2])
        assert isinstance(command, click.Command), f"no `spyre-ci ci {words[2]}`"
        known = {opt for param in command.params for opt in getattr(param, "opts", [])}
        used = {word for word in words[3:] if word.startswith("--")}
        assert used <= known, f"`spyre-ci ci {words[2]}` has no {sorted(used - known)}"
