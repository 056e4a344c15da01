"""`spyre-ci ci plan|checkout|select|test`: the select job and the test legs."""

from __future__ import annotations

import json
from pathlib import Path

import click

from spyre_ci.ci import runner_env, steps
from spyre_ci.ci.cli_common import (
    EVENT_PATH,
    MANIFESTS,
    PLAN_FILE,
    ci_group,
    plan_from_event,
    read_plan,
)
from spyre_ci.ci.upstream import CheckoutFailed, sparse_checkout


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
    plan, _ = plan_from_event(event_path)
    runner_env.write_outputs(plan.outputs())
    if write_to:
        write_to.parent.mkdir(parents=True, exist_ok=True)
        write_to.write_text(json.dumps(plan.to_json(), indent=2))
    click.echo(f"{'run' if plan.run else 'skip'}: {plan.reason}", err=True)


@ci_group.command("checkout")
@PLAN_FILE
@click.option(
    "--upstream-url", default=None, help="Default: https://github.com/<upstream_repo>.git"
)
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), required=True)
def checkout_command(plan_path: Path, upstream_url: str | None, dest: Path) -> None:
    """Sparse, shallow checkout of the upstream sources at the plan's commits."""
    plan = read_plan(plan_path)
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
@PLAN_FILE
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
    plan = read_plan(plan_path)
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
