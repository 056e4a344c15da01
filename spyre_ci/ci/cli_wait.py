"""`spyre-ci ci wait-for-jobs`: the report job waits for the test legs (and reports progress)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from spyre_ci.ci import runner_env
from spyre_ci.ci.cli_common import (
    AUDIENCE,
    CALLBACK_URL,
    EVENT_PATH,
    JOB_NAME,
    STATE_FILE,
    ci_group,
)
from spyre_ci.ci.cli_report import in_progress


@ci_group.command("wait-for-jobs")
@click.option(
    "--prefix", default="test", show_default=True, help="Job name (matrix legs: NAME (...))."
)
@click.option(
    "--matrix", "matrix_json", default="", help="The shard matrix: how many legs to expect."
)
@click.option("--timeout", type=float, default=6 * 3600.0, show_default=True, help="Seconds.")
@click.option(
    "--interval", type=float, default=15.0, show_default=True, help="Seconds between polls."
)
@click.option(
    "--steps-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the legs' steps here, for `ci report --steps-file`.",
)
@click.option(
    "--report-progress",
    is_flag=True,
    help="Send the run's steps done/total to the relay (in_progress again) as they change.",
)
@EVENT_PATH
@CALLBACK_URL
@AUDIENCE
@JOB_NAME
@STATE_FILE
def wait_for_jobs_command(
    prefix: str, matrix_json: str, timeout: float, interval: float, steps_out: Path | None,
    report_progress: bool, event_path: str | None, callback_url: str, audience: str,
    job_name: str | None, state_file: Path | None,
) -> None:  # fmt: skip
    """Wait for this run's test jobs (GitHub API, GITHUB_TOKEN with actions: read)."""
    from spyre_ci.ci.jobs_wait import WaitFailed, leg_steps, steps_done, wait_for_jobs

    last: list[tuple[int, int]] = []

    def progress(jobs: list[dict[str, Any]]) -> None:
        done, total = steps_done(jobs)
        if not report_progress or not total or (last and last[-1] == (done, total)):
            return
        last.append((done, total))
        try:
            in_progress(
                event_path, callback_url, audience, job_name, state_file,
                {"done": done, "total": total},
            )  # fmt: skip
        except click.ClickException as exc:  # progress is a nicety: never fail the wait for it
            click.echo(f"progress not reported: {exc.message}", err=True)

    try:
        expected = len(json.loads(matrix_json).get("include", [])) if matrix_json else 0
    except (json.JSONDecodeError, AttributeError) as exc:
        raise click.BadParameter(
            f"not a matrix JSON object ({exc})", param_hint="--matrix"
        ) from exc
    token = runner_env.env("GITHUB_TOKEN")
    if not token:
        raise click.UsageError(
            "GITHUB_TOKEN is not set (pass `env: GITHUB_TOKEN: ${{ github.token }}`)"
        )
    try:
        state = wait_for_jobs(
            api_url=runner_env.env("GITHUB_API_URL", "https://api.github.com").rstrip("/"),
            repo=runner_env.env("GITHUB_REPOSITORY"),
            run_id=runner_env.env("GITHUB_RUN_ID"),
            attempt=runner_env.env("GITHUB_RUN_ATTEMPT", "1"),
            token=token,
            prefix=prefix,
            expected=expected,
            timeout=timeout,
            interval=interval,
            on_poll=progress,
        )
    except WaitFailed as exc:
        raise click.ClickException(str(exc)) from exc
    if steps_out is not None:
        steps_out.write_text(json.dumps(leg_steps(state.legs)))
    runner_env.write_outputs({"result": state.result})
    click.echo(f"{state.seen} `{prefix}` job(s) finished: {state.result}", err=True)
