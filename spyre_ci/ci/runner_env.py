"""The workflow environment GitHub Actions (or the local target) provides. Thin shell."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from spyre_ci.ci.callback import WorkflowRun
from spyre_ci.json_input import read_json_object


def env(name: str, default: str = "", environ: Mapping[str, str] | None = None) -> str:
    return (os.environ if environ is None else environ).get(name, default)


def read_event(path: str | None = None) -> tuple[str, dict[str, Any]]:
    """`(GITHUB_EVENT_NAME, event JSON)`; errors name the variable or the file at fault."""
    event_name = env("GITHUB_EVENT_NAME")
    if not event_name:
        raise click.UsageError("GITHUB_EVENT_NAME is not set (is this a GitHub Actions step?)")
    event_path = path or env("GITHUB_EVENT_PATH")
    if not event_path:
        raise click.UsageError("GITHUB_EVENT_PATH is not set and --event-path was not given")
    return event_name, read_json_object(Path(event_path))  # bad input: exit 2, one line


def client_payload(event: Mapping[str, Any]) -> dict[str, Any] | None:
    payload = event.get("client_payload")
    return dict(payload) if isinstance(payload, Mapping) else None


def workflow_run(job_name: str | None = None) -> WorkflowRun:
    """This run's identity, from the variables every GitHub Actions step has."""
    server = env("GITHUB_SERVER_URL", "https://github.com")
    repo = env("GITHUB_REPOSITORY", "local/spyre-ci")
    run_id = env("GITHUB_RUN_ID") or uuid.uuid4().hex[:12]
    return WorkflowRun(
        name=env("GITHUB_WORKFLOW", "upstream-dispatch"),
        url=f"{server}/{repo}/actions/runs/{run_id}",
        run_id=run_id,
        run_attempt=env("GITHUB_RUN_ATTEMPT", "1"),
        job_name=job_name or env("GITHUB_JOB", "report"),
        check_run_id=env("SPYRE_CI_CHECK_RUN_ID"),
    )


def write_outputs(values: Mapping[str, str]) -> None:
    """Append to `GITHUB_OUTPUT` (multi-line values in the heredoc form); echo otherwise."""
    path = env("GITHUB_OUTPUT")
    lines = []
    for key, value in values.items():
        if "\n" in value:
            marker = f"EOF_{uuid.uuid4().hex}"
            lines.append(f"{key}<<{marker}\n{value}\n{marker}")
        else:
            lines.append(f"{key}={value}")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
    else:
        for line in lines:
            click.echo(line)
