"""`spyre-ci select`: which reused upstream tests an upstream change must run, and why.

Exit codes (a workflow can branch on them; docs/selection.md):
  0  selection written, at least one test selected
  4  selection written, nothing selected (the test job can be skipped)
  2  bad input: unknown version, missing ref, unreadable diff/manifest, bad options
  3  fetch failure: pip could not download a release, git could not fetch a PR
  1  unexpected internal error
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from selection.enumerate import DeviceProfile
from selection.errors import EXIT_EMPTY, EXIT_SELECTED, BadInput, SelectionError
from selection.outputs.blind_spots import is_change_spot
from selection.outputs.report import deps_note, drop_reason_kind
from selection.sources.release_tests import DEFAULT_REMOTE, DEFAULT_TIMEOUT, ReleaseTestSource


def default_cache() -> Path:
    return Path(os.environ.get("SPYRE_CI_CACHE") or Path.home() / ".cache" / "spyre-ci")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:40] or "x"


def default_out(from_: str | None, to: str | None, pr: int | None, diff: Path | None) -> Path:
    if pr is not None:
        name = f"selection-pr-{pr}"
    elif diff is not None:
        name = f"selection-diff-{_slug(diff.stem)}"
    else:
        name = f"selection-{_slug(from_ or 'base')}-{_slug(to or 'head')}"
    return Path("out") / name


class _Progress:
    """Rich progress bars for downloads, extraction and analysis."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bytes = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,  # an empty bar would leave a blank line before an error
            disable=not console.is_terminal,  # off a terminal, it leaves one on stopping
        )
        self.tasks: dict[str, TaskID] = {}

    def transfer(self, description: str, done: int, total: int) -> None:
        if description.startswith("mirroring") and description not in self.tasks:
            self.console.log(description)  # a step, not a transfer
            return
        task = self.tasks.get(description)
        if task is None:
            task = self.tasks[description] = self.bytes.add_task(description, total=total or None)
        self.bytes.update(task, completed=done, total=total or None)

    def finish(self) -> None:
        for task in self.tasks.values():
            info = self.bytes.tasks[task]
            self.bytes.update(task, total=info.completed or 1, completed=info.completed or 1)


def _agent(kind: str, llm: dict[str, Any], cache: Path) -> tuple[Any, dict[str, Any]]:
    if kind == "deterministic":
        return None, {"name": "deterministic"}
    from selection.agents.llm import LLMAgent, LLMConfig

    if not llm["url"] or not llm["model"]:
        raise BadInput("--agent llm needs --llm-url URL and --model NAME")
    config = LLMConfig(
        url=llm["url"],
        model=llm["model"],
        api_key=llm["api_key"],
        timeout=llm["timeout"],
        token_budget=llm["token_budget"],
        batch_size=llm["batch_size"],
        cache_dir=cache / "llm",
    )
    return LLMAgent(config), {
        "name": "llm",
        "url": config.url,
        "model": config.model,
        "token_budget": config.token_budget,
        "batch_size": config.batch_size,
    }


@click.command(
    "select",
    epilog="Exit codes: 0 tests selected, 4 nothing selected, 2 bad input, 3 fetch failure, "
    "1 internal error. Outputs and schema: docs/selection.md.",
)
@click.option(
    "--from",
    "from_",
    metavar="SPEC",
    help="Base: a release (2.13, 2.13.0) or, with --pytorch-repo, a ref/SHA.",
)
@click.option(
    "--to", metavar="SPEC", help="Head: a release (2.14) or, with --pytorch-repo, a ref/SHA."
)
@click.option(
    "--pr",
    type=int,
    metavar="N",
    help="Pull request N of --pytorch-repo (refs/pull/N/head, fetched from origin if missing).",
)
@click.option(
    "--base",
    metavar="REF",
    help="PR mode: the branch to diff against (default origin/main or main).",
)
@click.option(
    "--diff",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A unified diff applied onto --from (a ref with --pytorch-repo, or a release).",
)
@click.option(
    "--pytorch-repo",
    type=click.Path(path_type=Path, file_okay=False),
    help="A PyTorch git clone (commit-range and PR modes).",
)
@click.option(
    "--pytorch-src",
    type=click.Path(path_type=Path, file_okay=False),
    help="A PyTorch source tree with test/ (exact template enumeration).",
)
@click.option(
    "--tests-remote",
    envvar="SPYRE_CI_TESTS_REMOTE",
    default=DEFAULT_REMOTE,
    show_default=True,
    metavar="URL",
    help="Release mode: git remote whose v<version> tags give the release's test/ tree "
    "(shallow, sparse; $SPYRE_CI_TESTS_REMOTE).",
)
@click.option(
    "--fetch-tests/--no-fetch-tests",
    envvar="SPYRE_CI_FETCH_TESTS",
    default=True,
    show_default=True,
    help="Release mode: fetch the releases' test/ trees for exact ids ($SPYRE_CI_FETCH_TESTS=0: off).",
)
@click.option(
    "--tests-timeout",
    type=click.FloatRange(1, 3600),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Bound on each release test/ fetch; on failure ids are assumed.",
)
@click.option(
    "--manifest",
    "manifests",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Manifest files (default: the shipped ones). Repeatable.",
)
@click.option(
    "--capabilities",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Device capability file (default: torch_spyre_ref/capabilities.yaml): dtype order, aten aliases.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Output directory (default ./out/selection-<from>-<to>; with --pr N, ./out/selection-pr-N; with --diff F, ./out/selection-diff-<F without its suffix>).",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Wheel/mirror/LLM cache (default $SPYRE_CI_CACHE or ~/.cache/spyre-ci).",
)
@click.option(
    "--deps",
    default="auto",
    show_default=True,
    metavar="auto|none|FILE",
    help="Recorded dependencies (spyre-ci deps record): auto = the cache's map for the base's "
    "torch version and the device (kept there as SQLite); none = static links only; or a "
    "spyre-ci/deps JSON artifact (.json or .json.gz, as `spyre-ci deps export` writes).",
)
@click.option(
    "--widen",
    type=click.Choice(["canary", "full"]),
    default="canary",
    show_default=True,
    help="For changes to shared machinery: a stratified canary set, or every instance.",
)
@click.option(
    "--disable-stage",
    "disabled",
    multiple=True,
    metavar="NAME",
    help="Turn a stage off by name (detect, map, scope, triage). Repeatable.",
)
@click.option(
    "--agent",
    type=click.Choice(["deterministic", "llm"]),
    default="deterministic",
    show_default=True,
    help="Triage agent: rules without network, or an OpenAI-compatible model (--llm-url, --model); a group it cannot decide runs.",
)
@click.option(
    "--llm-url", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1."
)
@click.option("--model", metavar="NAME", help="Model name for --agent llm.")
@click.option(
    "--llm-api-key",
    envvar="OPENAI_API_KEY",
    metavar="KEY",
    help="Bearer token (default $OPENAI_API_KEY).",
)
@click.option(
    "--llm-timeout", type=float, default=60.0, show_default=True, help="Seconds per request."
)
@click.option(
    "--llm-token-budget",
    type=int,
    default=200_000,
    show_default=True,
    help="Tokens --agent llm may spend in one run; past it, the remaining groups run.",
)
@click.option(
    "--llm-batch-size", type=int, default=20, show_default=True, help="Groups per request."
)
@click.option(
    "--shards",
    type=click.IntRange(1, 256),
    default=4,
    show_default=True,
    help="How many shards the selected tests are split into (shards/, matrix.json).",
)
@click.option(
    "--durations",
    type=click.Path(path_type=Path, dir_okay=False),
    help="JSON {test id: seconds} to balance shards (else by count).",
)
@click.option(
    "--device-name",
    default="spyre",
    show_default=True,
    help="Backend name in generated test names.",
)
@click.option(
    "--device-class-suffix",
    default="SPYRE",
    show_default=True,
    help="Suffix of instantiated classes (SpyreTestBase: SPYRE; plain PrivateUse1TestBase: PRIVATEUSE1).",
)
@click.option(
    "--quiet",
    is_flag=True,
    help="Print only the output paths (stdout) and errors: no progress, notes, blind spots, "
    "largest causes or summary line (they are in the report).",
)
def select_command(**kw: Any) -> None:
    """Select the reused upstream tests an upstream change must run, and say why.

    \b
    spyre-ci select --from 2.13 --to 2.14
    spyre-ci select --pytorch-repo ~/pytorch --from v2.13.0 --to v2.14.0
    spyre-ci select --pytorch-repo ~/pytorch --pr 12345
    spyre-ci select --pytorch-repo ~/pytorch --from main --diff change.patch
    spyre-ci select --from 2.13.0 --diff change.patch    (a diff onto a release)

    A --diff file is a unified diff with paths as `git diff` writes them (a/torch/...,
    b/torch/...).
    """
    console = Console(stderr=True, quiet=kw["quiet"], log_path=False)
    try:
        with cycle_collection_paused():
            code = _select(kw, console)
    except SelectionError as exc:
        Console(stderr=True).print(  # even with --quiet; paths never broken across lines
            f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True
        )
        sys.exit(exc.exit_code)
    sys.exit(code)


@contextlib.contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """A selection run builds millions of long-lived objects (the universe, the link graph,
    the recording's rows) and next to no reference cycles; CPython's cycle collector
    re-scans the whole heap each time it grows by a quarter, which cost a seventh of a
    release upgrade's CPU (docs/benchmarks.md) for a few megabytes freed. Paused for one
    run of the command and restored after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def percent(part: int, whole: int) -> str:
    """`0.3 %`, `< 0.1 %` (selection.outputs.report.share)."""
    from selection.outputs.report import share

    return share(part / whole)


def _select(kw: dict[str, Any], console: Console) -> int:
    from selection.outputs.shards import load_durations
    from selection.outputs.writer import check_target, write_outputs
    from selection.pipeline import SelectOptions, prepare, run_pipeline, stage_registry

    cache = kw["cache_dir"] or default_cache()
    options = SelectOptions(
        from_=kw["from_"],
        to=kw["to"],
        pr=kw["pr"],
        base=kw["base"],
        diff=kw["diff"],
        pytorch_repo=kw["pytorch_repo"],
        pytorch_src=kw["pytorch_src"],
        manifests=list(kw["manifests"]),
        cache=cache,
        widen=kw["widen"],
        disabled=list(kw["disabled"]),
        device=DeviceProfile(kw["device_name"], kw["device_class_suffix"]),
        capabilities=kw["capabilities"],
        deps=kw["deps"],
        tests=ReleaseTestSource(
            kw["tests_remote"] if kw["fetch_tests"] else None, kw["tests_timeout"]
        ),
    )
    llm = {
        "url": kw["llm_url"],
        "model": kw["model"],
        "api_key": kw["llm_api_key"],
        "timeout": kw["llm_timeout"],
        "token_budget": kw["llm_token_budget"],
        "batch_size": kw["llm_batch_size"],
    }
    agent, agent_info = _agent(kw["agent"], llm, cache)
    durations = load_durations(kw["durations"])
    out = kw["out"] or default_out(kw["from_"], kw["to"], kw["pr"], kw["diff"])
    check_target(out)  # before the analysis, not after it
    stage_registry(disabled=options.disabled)  # a misspelt stage, before any download
    progress = _Progress(console)
    with progress.bytes:
        request, extra = prepare(options, progress.transfer, lambda m: console.log(m))
        progress.finish()
    analysis = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    with analysis:
        changed = len(request.changed_paths) + len(request.unanalysed)
        files = analysis.add_task(
            f"analysing {changed} changed upstream file{'' if changed == 1 else 's'}",
            total=len(request.changed_paths) or 1,
        )
        state = run_pipeline(
            request,
            agent,
            options.disabled,
            note=lambda m: console.log(m),
            file_progress=lambda i, n: analysis.update(files, completed=i, total=n),
        )
        analysis.update(files, completed=len(request.changed_paths) or 1)
    state.notes.extend(extra)
    paths = write_outputs(state, out, kw["shards"], durations, agent_info)
    _summary(console, state, paths)
    return EXIT_SELECTED if state.candidates else EXIT_EMPTY


SHOWN_BLIND_SPOTS = 5


def _summary(console: Console, state: Any, paths: dict[str, Path]) -> None:
    reused = state.reused_total
    selected = len(state.candidates)
    ratio = f" ({percent(selected, reused)} of {reused} reused)" if reused else ""
    note = deps_note(state.notes)
    if note:
        console.print(f"[dim]{note}[/]", highlight=False)
    # The run's own blind spots (no test/ tree, no C++) first; changed symbols nothing
    # links are many in a release upgrade: a count here, every one in the report.
    spots = sorted(state.blind_spots, key=is_change_spot)
    for spot in spots[:SHOWN_BLIND_SPOTS]:
        console.print(f"[yellow]blind spot:[/] {spot}")
    hidden = spots[SHOWN_BLIND_SPOTS:]
    if hidden:
        covered = " (each covered by a canary)" if all(map(is_change_spot, hidden)) else ""
        console.print(
            f"[yellow]… and {len(hidden)} more blind spots[/]{covered}: "
            "listed in report.md, 'Blind spots'"
        )
    _largest_causes(console, state.groups, state.request.widen)
    reasons = state.mapped.no_effect if state.mapped is not None else []
    no_effect = len(reasons)
    if not selected and no_effect:
        console.print(
            f"{no_effect} {'change' if no_effect == 1 else 'changes'}, none of which affects "
            "a reused test here: "
            "each reason is in report.md ('Changes that affect nothing here')"
        )
        if no_effect <= SHOWN_BLIND_SPOTS:  # a patch release's few: shown, not looked up
            for reason in reasons:
                console.print(f"  no effect: {reason}", highlight=False)
    if not selected and state.dropped:
        _why_dropped(console, state.dropped)
    console.print(
        f"[bold]selected {selected} tests[/]{ratio}: {state.request.base.label} -> {state.request.head.label}"
    )
    out = Console()  # stdout: where the outputs are, for people and scripts
    for name in ("report.html", "report.md", "selection.json"):
        out.print(f"{name}: {paths[name].resolve()}", highlight=False, soft_wrap=True)
    out.print(
        f"shards: {paths['selection.json'].parent.resolve() / 'shards'}",
        highlight=False,
        soft_wrap=True,
    )


def _why_dropped(console: Console, dropped: list[Any]) -> None:
    """Nothing selected, though changes reached tests: why each was dropped, most common
    reasons first."""
    reasons = Counter(drop_reason_kind(d.reason) for d in dropped)
    tests = "test" if len(dropped) == 1 else "tests"
    console.print(
        f"{len(dropped)} {tests} reached, none kept: every reason is in report.md "
        "('Dropped candidates')",
        highlight=False,
    )
    for reason, count in reasons.most_common(SHOWN_CAUSES):
        console.print(f"  {count} dropped: {reason}"[:CAUSE_WIDTH], highlight=False)


SHOWN_CAUSES = 3
CAUSE_WIDTH = 160
_LINK_COUNT = re.compile(r"^(.*? -> \d+ ways? in)")


def _largest_causes(console: Console, groups: list[Any], widen: str) -> None:
    """The causes that select the most tests, so that the console says why, not only how
    many (report.md, 'Biggest causes', lists more); where one is a canary, what to do for
    all it may reach. A group judged not needed selects nothing, so it is not among them."""
    selecting = [g for g in groups if g.verdict is None or g.verdict.decision != "not_needed"]
    largest = sorted(selecting, key=lambda g: -len(g.node_ids))[:SHOWN_CAUSES]
    if not largest:
        return
    console.print("largest causes (more in report.md, 'Biggest causes'):")
    for group in largest:
        text = group.cause.summary
        head = _LINK_COUNT.match(text)  # "f modified -> 435 ways in: template ...": the change
        text = head.group(1) if head else text
        if len(text) > CAUSE_WIDTH:
            text = text[: CAUSE_WIDTH - 1] + "…"
        console.print(f"  {len(group.node_ids)} tests: {text}", highlight=False)
    if widen != "full" and any(g.cause.kind == "canary" for g in largest):
        console.print(
            "  (a canary runs a stratified sample of what its change may reach: "
            "--widen full runs all of it)",
            highlight=False,
        )


def register(group: click.Group) -> None:
    group.add_command(select_command)
