"""`spyre-ci ci callback|wait-for-jobs|report`: the report job, which calls the relay back."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from spyre_ci.ci import report_inputs, runner_env, selection_report
from spyre_ci.ci.callback import (
    BadCallback,
    build_callback_body,
    conclusion_for,
    parse_progress,
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
from spyre_ci.ci.junit import counts_of
from spyre_ci.ci.oidc import NoIdToken, get_id_token
from spyre_ci.ci.plan import Plan
from spyre_ci.ci.run_report import failed_ids, run_report
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
@click.option(
    "--progress",
    "progress_text",
    default="",
    help="DONE/TOTAL steps: report progress again (same start time) while the run goes on.",
)
@click.option("--current-step", default="", help="With --progress: the step running now.")
@EVENT_PATH
@CALLBACK_URL
@AUDIENCE
@JOB_NAME
@STATE_FILE
def callback_command(
    status: str,
    progress_text: str,
    current_step: str,
    event_path: str | None,
    callback_url: str,
    audience: str,
    job_name: str | None,
    state_file: Path | None,
) -> None:
    """Tell the relay this job has started, or how far it is (the completed callback is `ci report`)."""
    try:
        progress = parse_progress(progress_text, current_step) if progress_text else None
    except BadCallback as exc:
        raise click.BadParameter(str(exc), param_hint="--progress") from exc
    in_progress(event_path, callback_url, audience, job_name, state_file, progress)


def in_progress(
    event_path: str | None,
    callback_url: str,
    audience: str,
    job_name: str | None,
    state_file: Path | None,
    progress: dict[str, Any] | None,
) -> None:
    """Send in_progress; with `progress`, again with the recorded start time (an identical
    report to the relay, which only records how far the run is)."""
    _, event = runner_env.read_event(event_path)
    run = runner_env.workflow_run(job_name)
    record = _state_file(state_file, run.job_name)
    recorded = _started(record) if progress else {}
    started_at = datetime.fromtimestamp(float(recorded.get("started_at", time.time())), UTC)
    if not recorded:
        record.write_text(json.dumps({"started_at": started_at.timestamp()}))
    payload = runner_env.client_payload(event)
    if payload is None:
        click.echo(
            "not a relay dispatch: nightly/periodic runs report once, at completion", err=True
        )
        return
    body = build_callback_body(
        payload, run, status="in_progress", started_at=started_at, progress=progress
    )
    _send(body, callback_url, audience)
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
@click.option(
    "--steps-file",
    "steps_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON list of the run's steps {job, name, outcome[, kind]} (`ci wait-for-jobs --steps-out`).",
)
@click.option(
    "--step",
    "step_pairs",
    multiple=True,
    help="JOB/STEP=OUTCOME of a step (e.g. select/checkout=failure); empty outcomes are ignored.",
)
@click.option(
    "--log-tail",
    "log_tail_of",
    default=None,
    help="STEP=FILE: the failing step's log, whose tail goes with the callback.",
)
@click.option("--junit-url", default="", help="Where the full JUnit files are (an artifact URL).")
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
    steps_files: tuple[Path, ...],
    step_pairs: tuple[str, ...],
    log_tail_of: str | None,
    junit_url: str,
    job_result_pairs: tuple[str, ...],
    job_status: str,
    job_name: str | None,
    state_file: Path | None,
) -> None:
    """Aggregate the JUnit results and send the completed callback."""
    plan, event = plan_from_event(event_path, upstream_sha)
    cases = report_inputs.read_cases(junit_dir)
    counts = counts_of(cases)
    steps = report_inputs.read_steps(steps_files, step_pairs)
    tail = report_inputs.read_log_tail(log_tail_of, steps, junit_dir)
    ran_tests = bool(report_inputs.junit_files(junit_dir))
    report = run_report(steps, cases if ran_tests else None, junit_url=junit_url, tail=tail)
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
        selection=_selection(selection_dir, failed_ids(report)) if plan.run else None,
        run_report=report if plan.run else None,
    )
    runner_env.write_outputs(
        {"conclusion": final, "test_results": json.dumps(counts.as_test_results())}
    )
    click.echo(f"conclusion {final}: {counts.as_test_results()}", err=True)
    _send(body, callback_url, audience)


def _selection(selection_dir: Path | None, failed: list[str]) -> dict[str, Any] | None:
    if selection_dir is None:
        return None
    try:
        return selection_report.attachment(selection_dir, failed)
    except selection_report.BadSelection as exc:
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
