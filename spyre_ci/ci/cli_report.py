"""`spyre-ci ci callback|wait-for-jobs|report`: the report job, which calls the relay back."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from spyre_ci.ci import runner_env, selection_report
from spyre_ci.ci.callback import (
    BadCallback,
    build_callback_body,
    conclusion_for,
    self_reported_payload,
)
from spyre_ci.ci.cli_common import (
    AUDIENCE,
    CALLBACK_URL,
    EVENT_PATH,
    JOB_NAME,
    STATE_FILE,
    ci_group,
    plan_from_event,
)
from spyre_ci.ci.junit import BadJUnit, TestCounts, aggregate
from spyre_ci.ci.oidc import NoIdToken, get_id_token
from spyre_ci.ci.plan import Plan
from spyre_ci.ci.send import CallbackFailed, post_callback
from spyre_ci.exit_codes import BadInput


def _state_file(given: Path | None, job_name: str) -> Path:
    if given:
        return given
    run_id = runner_env.env("GITHUB_RUN_ID", "local")
    return (
        Path(runner_env.env("RUNNER_TEMP", "/tmp")) / f"spyre-ci-callback-{run_id}-{job_name}.json"
    )


def _send(body: dict[str, Any], callback_url: str, audience: str) -> None:
    url = callback_url or str(body.get("callback_url") or "")
    if not url:
        raise BadInput("no callback URL: pass --callback-url or set SPYRE_CI_CALLBACK_URL")
    try:
        token = get_id_token(audience)
        answer = post_callback(url, body, token)
    except (NoIdToken, CallbackFailed) as exc:
        raise click.ClickException(str(exc)) from exc
    what = "ignored by the relay" if answer.ignored else "accepted"
    click.echo(
        f"{body['workflow']['status']} callback {what} (HTTP {answer.status}, {answer.attempts} attempt(s))",
        err=True,
    )


def _client_payload(plan: Plan, event: dict[str, Any]) -> dict[str, Any]:
    payload = runner_env.client_payload(event)
    if payload is not None:
        return payload
    event_type = "nightly" if plan.event_type == "nightly" else "periodic"
    try:
        return self_reported_payload(event_type, plan.head_sha, plan.upstream_repo)
    except BadCallback as exc:
        raise BadInput(str(exc)) from exc


@ci_group.command("callback")
@click.option("--status", type=click.Choice(["in_progress"]), required=True)
@EVENT_PATH
@CALLBACK_URL
@AUDIENCE
@JOB_NAME
@STATE_FILE
def callback_command(
    status: str,
    event_path: str | None,
    callback_url: str,
    audience: str,
    job_name: str | None,
    state_file: Path | None,
) -> None:
    """Tell the relay this job has started (the completed callback is `ci report`)."""
    _, event = runner_env.read_event(event_path)
    run = runner_env.workflow_run(job_name)
    started_at = datetime.now(UTC)
    record = _state_file(state_file, run.job_name)
    record.write_text(json.dumps({"started_at": started_at.timestamp()}))
    payload = runner_env.client_payload(event)
    if payload is None:
        click.echo(
            "not a relay dispatch: nightly/periodic runs report once, at completion", err=True
        )
        return
    _send(
        build_callback_body(payload, run, status=status, started_at=started_at),
        callback_url,
        audience,
    )
    record.write_text(json.dumps({"started_at": started_at.timestamp(), "in_progress_sent": True}))


@ci_group.command("report")
@EVENT_PATH
@click.option(
    "--junit-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory searched recursively for *.xml JUnit files.",
)
@click.option(
    "--needs", "needs_json", default="{}", help="toJson(needs) of the jobs before this one."
)
@click.option("--upstream-sha", default="", help="The tested upstream SHA (nightly/manual runs).")
@click.option("--artifact-url", default="")
@click.option(
    "--job-result",
    "job_result_pairs",
    multiple=True,
    help="JOB=RESULT of a job not in --needs (e.g. test=failure from `ci wait-for-jobs`).",
)
@click.option(
    "--job-status", default="", help="This job's own `job.status` (cancelled/failure count)."
)
@click.option("--conclusion", default=None, help="Override the computed conclusion.")
@click.option(
    "--selection-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The selection's output (selection.json, report.html): sent with the callback.",
)
@CALLBACK_URL
@AUDIENCE
@JOB_NAME
@STATE_FILE
def report_command(
    event_path: str | None,
    junit_dir: Path | None,
    needs_json: str,
    upstream_sha: str,
    artifact_url: str,
    conclusion: str | None,
    callback_url: str,
    audience: str,
    selection_dir: Path | None,
    job_result_pairs: tuple[str, ...],
    job_status: str,
    job_name: str | None,
    state_file: Path | None,
) -> None:
    """Aggregate the JUnit results and send the completed callback."""
    plan, event = plan_from_event(event_path, upstream_sha)
    counts = _counts(junit_dir)
    job_results = {**_job_results(needs_json), **_pairs(job_result_pairs)}
    if job_status:
        job_results["this job"] = job_status
    final = conclusion or conclusion_for(
        planned_run=plan.run, job_results=job_results, tests_failed=counts.failed
    )
    run = runner_env.workflow_run(job_name)
    started = _started(_state_file(state_file, run.job_name))
    started_at = datetime.fromtimestamp(float(started.get("started_at", time.time())), UTC)
    client_payload = _client_payload(plan, event)
    if runner_env.client_payload(event) is not None and not started.get("in_progress_sent"):
        # The state machine needs in_progress before completed: send it now (an identical
        # repeat of one the relay did get is acknowledged idempotently).
        click.echo("in_progress was not acknowledged: sending it before completed", err=True)
        _send(
            build_callback_body(client_payload, run, status="in_progress", started_at=started_at),
            callback_url,
            audience,
        )
    body = build_callback_body(
        client_payload,
        run,
        status="completed",
        started_at=started_at,
        completed_at=datetime.now(UTC),
        conclusion=final,
        test_results=counts.as_test_results() if plan.run else None,
        artifact_url=artifact_url,
        selection=_selection(selection_dir) if plan.run else None,
    )
    runner_env.write_outputs(
        {"conclusion": final, "test_results": json.dumps(counts.as_test_results())}
    )
    click.echo(f"conclusion {final}: {counts.as_test_results()}", err=True)
    _send(body, callback_url, audience)


def _selection(selection_dir: Path | None) -> dict[str, Any] | None:
    if selection_dir is None:
        return None
    try:
        return selection_report.attachment(selection_dir)
    except selection_report.BadSelection as exc:
        raise BadInput(str(exc)) from exc


def _counts(junit_dir: Path | None) -> TestCounts:
    if junit_dir is None or not junit_dir.exists():
        return TestCounts()
    files = sorted(junit_dir.rglob("*.xml"))
    try:
        return aggregate((str(path), path.read_text()) for path in files)
    except BadJUnit as exc:
        raise BadInput(str(exc)) from exc


def _job_results(needs_json: str) -> dict[str, str]:
    try:
        needs = json.loads(needs_json or "{}")
    except json.JSONDecodeError as exc:
        raise BadInput(f"--needs: not valid JSON ({exc})") from exc
    if not isinstance(needs, dict):
        raise BadInput("--needs: expected toJson(needs), an object")
    return {
        job: str(info.get("result", "")) for job, info in needs.items() if isinstance(info, dict)
    }


def _pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    results = {}
    for pair in pairs:
        job, sep, result = pair.partition("=")
        if not sep or not job:
            raise click.BadParameter(f"{pair!r} is not JOB=RESULT", param_hint="--job-result")
        results[job] = result
    return results


def _started(state_file: Path) -> dict[str, Any]:
    """What `ci callback --status in_progress` recorded: `started_at`, `in_progress_sent`."""
    try:
        data = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


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
def wait_for_jobs_command(prefix: str, matrix_json: str, timeout: float, interval: float) -> None:
    """Wait for this run's test jobs (GitHub API, GITHUB_TOKEN with actions: read)."""
    from spyre_ci.ci.jobs_wait import WaitFailed, wait_for_jobs

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
        )
    except WaitFailed as exc:
        raise click.ClickException(str(exc)) from exc
    runner_env.write_outputs({"result": state.result})
    click.echo(f"{state.seen} `{prefix}` job(s) finished: {state.result}", err=True)
