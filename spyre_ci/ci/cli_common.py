"""What the `spyre-ci ci` commands share: the group, common options, the plan from the event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from spyre_ci.ci import runner_env
from spyre_ci.ci.oidc import DEFAULT_AUDIENCE
from spyre_ci.ci.plan import BadEvent, Plan, plan_event
from spyre_ci.exit_codes import BadInput
from spyre_ci.json_input import read_json_object

EVENT_PATH = click.option(
    "--event-path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The event JSON (default: $GITHUB_EVENT_PATH).",
)
CALLBACK_URL = click.option(
    "--callback-url",
    envvar="SPYRE_CI_CALLBACK_URL",
    default="",
    help="The relay's /github/callback URL (env SPYRE_CI_CALLBACK_URL).",
)
AUDIENCE = click.option(
    "--audience",
    envvar="SPYRE_CI_OIDC_AUDIENCE",
    default=DEFAULT_AUDIENCE,
    show_default=True,
    help="OIDC audience the relay expects (env SPYRE_CI_OIDC_AUDIENCE).",
)
JOB_NAME = click.option(
    "--job-name", default=None, help="Job name for the check run (default: $GITHUB_JOB)."
)
MANIFESTS = click.option(
    "--manifest",
    "manifests",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="SPYRE_CI_MANIFESTS",
    help="The backend's manifest(s) (default: the shipped ones; env SPYRE_CI_MANIFESTS, ':'-separated).",
)
PLAN_FILE = click.option(
    "--plan",
    "plan_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The plan JSON `spyre-ci ci plan --write` wrote.",
)
STATE_FILE = click.option(
    "--state-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the in_progress callback records its start time for the completed one.",
)


@click.group("ci")
def ci_group() -> None:
    """Downstream CI: what upstream-dispatch.yml runs (plan, checkout, select, test, report).

    Exit codes: 0 done; 1 failed (checkout, the relay refused a callback, no OIDC token);
    2 bad input (an event, plan, JUnit or selection file that cannot be used, a missing
    option or variable); `ci select` fails with select's code, `ci test` with test's.
    """


def plan_from_event(event_path: str | None, upstream_sha: str = "") -> tuple[Plan, dict[str, Any]]:
    event_name, event = runner_env.read_event(event_path)
    try:
        plan = plan_event(event_name, event, run_id=runner_env.env("GITHUB_RUN_ID"))
    except BadEvent as exc:
        raise BadInput(f"{event_path or runner_env.env('GITHUB_EVENT_PATH')}: {exc}") from exc
    if upstream_sha and plan.event_type in ("nightly", "manual"):
        plan = Plan.from_json({**plan.to_json(), "head_sha": upstream_sha})
    return plan, event


def read_plan(path: Path) -> Plan:
    return Plan.from_json(read_json_object(path))
