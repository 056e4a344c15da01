"""`spyre-ci ci run-workflow|demo`: the workflow on this machine (the relay's local target)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import click

from spyre_ci.ci.cli_common import MANIFESTS, ci_group
from spyre_ci.json_input import read_json_object


@ci_group.command("run-workflow")
@click.option("--event-name", default="repository_dispatch", show_default=True)
@click.option(
    "--event-path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True
)
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--upstream-url", required=True, help="git URL or path of the upstream repository")
@click.option(
    "--repository", default="local/spyre-ci", show_default=True, help="plays GITHUB_REPOSITORY"
)
@click.option("--server-url", default="http://127.0.0.1", show_default=True)
@click.option("--run-id", default=None, help="plays GITHUB_RUN_ID (default: random)")
@click.option("--shards", type=click.IntRange(1, 64), default=1, show_default=True)
@MANIFESTS
def run_workflow_command(
    event_name: str, event_path: Path, workdir: Path, upstream_url: str, repository: str,
    server_url: str, run_id: str | None, shards: int, manifests: tuple[Path, ...],
) -> None:  # fmt: skip
    """Run upstream-dispatch.yml's jobs here, step by step (the relay's local target)."""
    from spyre_ci.ci.local_workflow import LocalRun, run_local_workflow

    event = read_json_object(event_path)
    run = LocalRun(
        event_name=event_name, event=event, workdir=workdir, upstream_url=upstream_url,
        repository=repository, server_url=server_url, shards=shards, event_path=event_path,
        # every step sees the manifests as a workflow sets them: env SPYRE_CI_MANIFESTS
        extra_env={"SPYRE_CI_MANIFESTS": os.pathsep.join(str(m.resolve()) for m in manifests)}
        if manifests else {},
    )  # fmt: skip
    if run_id:
        run = dataclasses.replace(run, run_id=run_id)
    result = run_local_workflow(run)
    for step in result.steps:
        mark = "ok " if step.returncode == 0 else "ERR"
        click.echo(f"[{mark}] {step.job:<22} {' '.join(step.command[3:])[:110]}  (log: {step.log})")
    if result.jobs["select"].outputs.get("duplicate") == "true":
        click.echo(f"not run: {result.jobs['select'].outputs.get('claim_reason', 'duplicate')}")
        return
    click.echo(f"conclusion: {result.conclusion or 'not reported'}")
    if result.jobs["report"].result != "success":
        raise SystemExit(1)


@ci_group.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".relay/demo"),
    show_default=True,
)
@click.option("--upstream-repo", default="pytorch/pytorch", show_default=True)
def demo_command(directory: Path, upstream_repo: str) -> None:
    """Create the demo upstream repository, its manifest and two PR webhooks (make serve)."""
    from spyre_ci.ci.demo import build_demo_upstream

    demo = build_demo_upstream(directory.resolve(), repo_name=upstream_repo)
    click.echo(f"demo upstream: {demo.path} (main {demo.main_sha[:12]})")
    click.echo(f"  manifest:    {demo.manifest}")
    click.echo(f"  PR #101 (passes): {demo.good_event}")
    click.echo(f"  PR #102 (breaks add): {demo.bad_event}")
