"""`spyre-ci ci ...`: the commands `upstream-dispatch.yml` wires together.

Each command is a thin shell: read the environment a workflow step has, call the
pure decision (`plan`, `junit`, `callback`), do the I/O, write `GITHUB_OUTPUT`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from spyre_ci.ci import runner_env, selection_report, steps
from spyre_ci.ci.callback import (
    BadCallback,
    build_callback_body,
    conclusion_for,
    self_reported_payload,
)
from spyre_ci.ci.junit import BadJUnit, TestCounts, aggregate
from spyre_ci.ci.oidc import DEFAULT_AUDIENCE, NoIdToken, get_id_token
from spyre_ci.ci.plan import BadEvent, Plan, plan_event
from spyre_ci.ci.send import CallbackFailed, post_callback
from spyre_ci.ci.upstream import CheckoutFailed, sparse_checkout

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
STATE_FILE = click.option(
    "--state-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the in_progress callback records its start time for the completed one.",
)


@click.group("ci")
def ci_group() -> None:
    """Downstream CI: what upstream-dispatch.yml runs (plan, checkout, select, test, report)."""


def _plan(event_path: str | None, upstream_sha: str = "") -> tuple[Plan, dict[str, Any]]:
    event_name, event = runner_env.read_event(event_path)
    try:
        plan = plan_event(event_name, event, run_id=runner_env.env("GITHUB_RUN_ID"))
    except BadEvent as exc:
        raise click.ClickException(
            f"{event_path or runner_env.env('GITHUB_EVENT_PATH')}: {exc}"
        ) from exc
    if upstream_sha and plan.event_type in ("nightly", "manual"):
        plan = Plan.from_json({**plan.to_json(), "head_sha": upstream_sha})
    return plan, event


@ci_group.command("plan")
@EVENT_PATH
@click.option(
    "--write",
    "write_to",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the plan as JSON here.",
)
def plan_command(event_path: str | None, write_to: Path | None) -> None:
    """Decide run or skip for the event; write the plan to GITHUB_OUTPUT."""
    plan, _ = _plan(event_path)
    runner_env.write_outputs(plan.outputs())
    if write_to:
        write_to.parent.mkdir(parents=True, exist_ok=True)
        write_to.write_text(json.dumps(plan.to_json(), indent=2))
    click.echo(f"{'run' if plan.run else 'skip'}: {plan.reason}", err=True)


@ci_group.command("checkout")
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
)
@click.option(
    "--upstream-url", default=None, help="Default: https://github.com/<upstream_repo>.git"
)
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), required=True)
def checkout_command(plan_path: Path, upstream_url: str | None, dest: Path) -> None:
    """Sparse, shallow checkout of the upstream sources at the plan's commits."""
    plan = Plan.from_json(json.loads(plan_path.read_text()))
    url = upstream_url or f"https://github.com/{plan.upstream_repo}.git"
    try:
        checkout = sparse_checkout(url, dest, plan.head_sha, plan.base_sha)
    except CheckoutFailed as exc:
        raise click.ClickException(str(exc)) from exc
    resolved = {**plan.to_json(), "head_sha": checkout.head_sha, "base_sha": checkout.base_sha}
    if plan.event_type == "nightly":
        resolved["delivery_id"] = checkout.head_sha
    plan_path.write_text(json.dumps(resolved, indent=2))
    runner_env.write_outputs({"head_sha": checkout.head_sha, "base_sha": checkout.base_sha})
    click.echo(
        f"upstream {checkout.base_sha[:12] or '(none)'}..{checkout.head_sha[:12]} in {dest}",
        err=True,
    )


@ci_group.command("select")
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
)
@click.option(
    "--pytorch-repo", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--shards", type=click.IntRange(1, 256), default=4, show_default=True)
@MANIFESTS
def select_command(
    plan_path: Path, pytorch_repo: Path, out: Path, shards: int, manifests: tuple[Path, ...]
) -> None:
    """Run `spyre-ci select` for the plan; write the shard matrix to GITHUB_OUTPUT."""
    plan = Plan.from_json(json.loads(plan_path.read_text()))
    result = steps.run_select(plan, pytorch_repo, out, shards, list(manifests))
    runner_env.write_outputs(
        {
            "matrix": json.dumps(result.matrix),
            "selected": "all" if result.selected is None else str(result.selected),
            "has_tests": "true" if result.has_tests else "false",
        }
    )
    what = "every reused test" if result.selected is None else f"{result.selected} test(s)"
    click.echo(f"selected {what} in {len(result.matrix['include'])} shard(s)", err=True)


@ci_group.command("test")
@click.option(
    "--selection", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True
)
@click.option("--shard", type=int, required=True)
@click.option(
    "--pytorch-src", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True
)
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), required=True)
@MANIFESTS
def test_command(
    selection: Path, shard: int, pytorch_src: Path, junit: Path, manifests: tuple[Path, ...]
) -> None:
    """Run one shard of the selection with `spyre-ci test`; JUnit XML to --junit."""
    code = steps.run_test_shard(selection, shard, pytorch_src, junit, list(manifests))
    raise SystemExit(code)


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
        raise click.ClickException(
            "no callback URL: pass --callback-url or set SPYRE_CI_CALLBACK_URL"
        )
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
        raise click.ClickException(str(exc)) from exc


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
    _state_file(state_file, run.job_name).write_text(
        json.dumps({"started_at": started_at.timestamp()})
    )
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
    plan, event = _plan(event_path, upstream_sha)
    counts = _counts(junit_dir)
    job_results = {**_job_results(needs_json), **_pairs(job_result_pairs)}
    if job_status:
        job_results["this job"] = job_status
    final = conclusion or conclusion_for(
        planned_run=plan.run, job_results=job_results, tests_failed=counts.failed
    )
    run = runner_env.workflow_run(job_name)
    started_at = _started_at(_state_file(state_file, run.job_name))
    body = build_callback_body(
        _client_payload(plan, event),
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
        raise click.ClickException(str(exc)) from exc


def _counts(junit_dir: Path | None) -> TestCounts:
    if junit_dir is None or not junit_dir.exists():
        return TestCounts()
    files = sorted(junit_dir.rglob("*.xml"))
    try:
        return aggregate((str(path), path.read_text()) for path in files)
    except BadJUnit as exc:
        raise click.ClickException(str(exc)) from exc


def _job_results(needs_json: str) -> dict[str, str]:
    try:
        needs = json.loads(needs_json or "{}")
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"--needs: not valid JSON ({exc})") from exc
    if not isinstance(needs, dict):
        raise click.ClickException("--needs: expected toJson(needs), an object")
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


def _started_at(state_file: Path) -> datetime:
    try:
        return datetime.fromtimestamp(float(json.loads(state_file.read_text())["started_at"]), UTC)
    except (OSError, ValueError, KeyError):
        return datetime.now(UTC)


def register(group: click.Group) -> None:
    group.add_command(ci_group)


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

    event = json.loads(event_path.read_text())
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
