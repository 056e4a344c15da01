"""`spyre-ci deps {record,export,import,show}`: observed dependencies of each (op, dtype).

Importing this module never imports torch (`record` runs it in worker subprocesses).
Bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from selection.observed import SCHEMA_VERSION, Pair
from selection.sources.deps_artifact import BadArtifact, read_artifact, write_artifact
from selection.sources.deps_store import (
    UnreadableMap,
    map_path,
    merged,
    read_document,
    scan_maps,
    summarize,
    write_document,
)
from spyre_ci.deps import ALL_PATHS
from spyre_ci.deps.scope import PairFilter, ScopeError, capability_filter

EXIT_BAD_INPUT = 2
_CACHE_HELP = "cache (default $SPYRE_CI_CACHE or ~/.cache/spyre-ci); maps live in <cache>/deps/"
_FILE = click.Path(dir_okay=False, path_type=Path)

PIPED_WIDTH = 240  # `deps show` piped: wide enough for an ISO time and a cache path


def default_cache() -> Path:
    from selection.cli import default_cache as selection_cache

    return selection_cache()


def _fail(message: str) -> NoReturn:
    Console(stderr=True).print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True
    )
    sys.exit(EXIT_BAD_INPUT)


def _names(values: Iterable[str]) -> frozenset[str]:
    """Repeatable options that also take comma-separated lists."""
    return frozenset(v.strip() for value in values for v in value.split(",") if v.strip())


@click.group("deps")
def deps_group() -> None:
    """Observed dependencies: what each reused (op, dtype) executes on the device."""


def _dtypes(values: tuple[str, ...]) -> frozenset[str]:
    from test_manifests.dtype_names import CANONICAL_DTYPES, DTYPE_ALIASES

    names = frozenset(DTYPE_ALIASES.get(d, d) for d in _names(values))
    unknown = sorted(names - CANONICAL_DTYPES)
    if unknown:
        _fail(f"--dtypes: unknown dtype {unknown[0]!r}")
    return names


def _pairs(manifests: tuple[Path, ...], capabilities: Path | None, keep: PairFilter) -> list[Pair]:
    from spyre_ci.deps.scope import installed_torch_root, reused_pairs

    for path in (*manifests, *([capabilities] if capabilities else [])):
        if not path.is_file():
            _fail(f"{path}: no such file")
    try:
        pairs = reused_pairs(manifests or None, installed_torch_root())
        pairs = capability_filter(pairs, capabilities)
    except ScopeError as exc:
        _fail(str(exc))
    chosen = [p for p in pairs if keep.keeps(p)]
    if not chosen:
        wanted = ", ".join(sorted(keep.ops | keep.dtypes)) or "the manifests"
        _fail(f"no in-scope (op, dtype) pair matches {wanted} ({len(pairs)} in scope)")
    return chosen


@deps_group.command("record")
@click.option("--manifest", "manifests", multiple=True, type=_FILE,
              help="manifest(s) whose reused pairs are recorded (default: the shipped ones)")  # fmt: skip
@click.option("--capabilities", type=_FILE,
              help="keep only the ops/dtypes this capability file supports")  # fmt: skip
@click.option("--ops", multiple=True, help="only these ops (repeatable or comma-separated)")
@click.option("--dtypes", multiple=True, help="only these dtypes (repeatable or comma-separated)")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), help=_CACHE_HELP)
@click.option(
    "--out", type=_FILE, help="also write the stored map as a JSON artifact (.json or .json.gz)"
)
@click.option("--max-samples", type=click.IntRange(min=1), default=32, show_default=True,
              help="samples per path")  # fmt: skip
@click.option("--compile-samples", type=click.IntRange(min=0), default=1, show_default=True,
              help="samples through torch.compile (one fresh compilation per pair)")  # fmt: skip
@click.option("--jobs", type=click.IntRange(min=1), default=2, show_default=True,
              help="worker processes")  # fmt: skip
@click.option("--backend-module", default="torch_spyre_ref", show_default=True,
              help="module to import first; it registers the PrivateUse1 device")  # fmt: skip
@click.option("--compile-backend", default="spyre", show_default=True,
              help="torch.compile backend name")  # fmt: skip
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="seconds a pair may take before its worker is replaced")  # fmt: skip
@click.option("--quiet", is_flag=True, help="no progress bar")
def record_command(**kw: Any) -> None:
    """Run each reused (op, dtype)'s samples on the device and record what executed.

    The pairs are those the manifests run (narrowed by --ops/--dtypes/--capabilities); the
    map of this torch version and device is rewritten whole, keeping the rows of pairs not
    recorded this time. See docs/deps.md.
    """
    from spyre_ci.deps.record import RecordingFailed, RecordOptions, record

    keep = PairFilter(_names(kw["ops"]), _dtypes(kw["dtypes"]))
    out: Path | None = kw["out"]
    if out is not None and not out.parent.is_dir():
        _fail(f"--out {out}: directory {out.parent} does not exist")
    cache = kw["cache_dir"] or default_cache()
    _check_storable(cache / "deps")
    pairs = _pairs(kw["manifests"], kw["capabilities"], keep)
    paths = (
        ALL_PATHS if kw["compile_samples"] else tuple(p for p in ALL_PATHS if "compile" not in p)
    )
    options = RecordOptions(
        backend_module=kw["backend_module"], compile_backend=kw["compile_backend"],
        max_samples=kw["max_samples"], compile_samples=kw["compile_samples"],
        jobs=kw["jobs"], timeout=kw["timeout"], paths=paths,
    )  # fmt: skip
    console = Console(stderr=True, quiet=kw["quiet"])
    started = time.monotonic()
    try:
        recording = _record_with_progress(console, pairs, options, record)
    except RecordingFailed as exc:
        _fail(
            f"--backend-module {kw['backend_module']}: no worker started: {str(exc).removeprefix('error: ')}"
        )
    except KeyboardInterrupt:
        click.echo("interrupted: nothing written (the previous map, if any, is kept)", err=True)
        sys.exit(130)
    doc = recording.document(options, options.paths)
    stored = _store(cache, doc, out)
    failed = sum(r["status"] != "ok" for r in recording.rows)
    click.echo(
        f"recorded {len(recording.rows) - failed} of {len(pairs)} pairs ({failed} failed) "
        f"for torch {doc['torch_version']} on {doc['device']} "
        f"in {time.monotonic() - started:.0f} s: {stored}"
    )
    if out is not None:
        click.echo(f"wrote {out} (the map as a JSON artifact)")


def _check_storable(directory: Path) -> None:
    """Fail before recording, not after it (a whole scope takes 20 minutes), when the map
    could not be stored there. Nothing is created yet."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        _fail(f"--cache-dir: {existing}: not a directory")
    if not os.access(existing, os.W_OK):
        _fail(f"--cache-dir: {existing}: not writable")


def _store(cache: Path, doc: dict[str, Any], out: Path | None) -> Path:
    """Merge into the existing map (an unreadable one is replaced), store, export."""
    target = map_path(cache, doc["torch_version"], doc["device"])
    try:
        old = read_document(target) if target.is_file() else None
    except (sqlite3.Error, ValueError) as exc:
        click.echo(f"replacing {target}: not a readable map ({exc})", err=True)
        old = None
    if old is not None and old.get("schema_version") != doc.get("schema_version"):
        # an older recorder's pairs mean something else: replaced, not merged
        click.echo(
            f"replacing {target}: a schema-{old.get('schema_version')} map of "
            f"{len(old.get('pairs', []))} pairs (not merged)",
            err=True,
        )
        old = None
    whole = merged(old, doc)
    try:
        stored = write_document(cache, whole)
        if out is not None:
            write_artifact(out, whole)
    except OSError as exc:
        _fail(f"{exc.filename or cache}: {exc.strerror or exc}")
    return stored


def _record_with_progress(console: Console, pairs: list[Pair], options: Any, record: Any) -> Any:
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), console=console,
    )  # fmt: skip
    with progress:
        task = progress.add_task(
            f"recording on {options.jobs} worker(s)", total=len(pairs), failed=0
        )
        failed = 0

        def on_row(row: dict[str, Any]) -> None:
            nonlocal failed
            failed += row["status"] != "ok"
            progress.update(
                task, advance=1, failed=failed,
                description=f"{row['op']} {row['dtype']}",
            )  # fmt: skip

        return record(pairs, options, on_row)


@deps_group.command("export")
@click.option("--torch-version", required=True, help="e.g. 2.13.0 (2.13.0+cpu serves it)")
@click.option("--device", required=True, help="device name, e.g. spyre")
@click.option("--out", required=True, type=_FILE, help="JSON artifact to write (.json or .json.gz)")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), help=_CACHE_HELP)
def export_command(torch_version: str, device: str, out: Path, cache_dir: Path | None) -> None:
    """Write a recorded map as a `spyre-ci/deps` JSON artifact."""
    from selection.sources.deps_store import choose_map

    cache = cache_dir or default_cache()
    maps, unreadable = scan_maps(cache)
    chosen = choose_map(maps, torch_version, device)
    serving = [u for u in unreadable if u.could_serve(torch_version, device)]
    if chosen is None and serving:
        _fail(serving[0].describe())
    if chosen is None:
        have = ", ".join(f"{m.torch_version} on {m.device}" for m in maps) or "none"
        _fail(f"no map recorded for torch {torch_version} on {device} in {cache} (maps: {have})")
    try:
        doc = read_document(chosen.path)
    except (sqlite3.Error, ValueError) as exc:
        _fail(UnreadableMap(chosen.path, str(exc) or type(exc).__name__).describe())
    try:
        write_artifact(out, doc)
    except OSError as exc:
        _fail(f"{out}: {exc.strerror or exc}")
    click.echo(
        f"wrote {out} (torch {chosen.torch_version} on {chosen.device}, {chosen.recorded} pairs)"
    )


@deps_group.command("import")
@click.argument("file", type=_FILE)
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), help=_CACHE_HELP)
def import_command(file: Path, cache_dir: Path | None) -> None:
    """Store a `spyre-ci/deps` JSON artifact as the map of its (torch version, device)."""
    try:
        doc = read_artifact(file)
    except BadArtifact as exc:
        _fail(f"{file}: {exc}")
    stored = write_document(cache_dir or default_cache(), doc)
    summary = summarize(stored)
    click.echo(
        f"imported {summary.recorded} pairs ({summary.failed} failed) for torch "
        f"{summary.torch_version} on {summary.device}: {stored}"
    )


@deps_group.command("show")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), help=_CACHE_HELP)
@click.option("--failures", is_flag=True, help="list every failed pair with its status")
def show_command(cache_dir: Path | None, failures: bool) -> None:
    """The recorded maps in the cache: torch version, device, pairs, failures."""
    cache = cache_dir or default_cache()
    maps, unreadable = scan_maps(cache)
    for bad in unreadable:  # on stderr, so the table stays what a script reads
        click.echo(f"warning: {bad.describe()}", err=True)
    if not maps:
        click.echo(f"no readable recorded maps in {cache / 'deps'}")
        return
    table = Table("torch", "device", "recorded at", "pairs", "failed", "schema", "file")
    for m in maps:
        schema = str(m.schema_version)
        if m.schema_version != SCHEMA_VERSION:
            schema += " (stale: not used; record again)"
        table.add_row(
            m.torch_version,
            m.device,
            m.recorded_at,
            str(m.recorded),
            str(m.failed),
            schema,
            str(m.path),
        )
    console = Console(soft_wrap=True)
    if not console.is_terminal:  # piped: rich's 80 columns would cut the dates and paths
        console = Console(soft_wrap=True, width=max(console.width, PIPED_WIDTH))
    console.print(table)
    for m in maps if failures else []:
        for (database, op, dtype), status in m.failures:
            click.echo(f"{m.torch_version} {m.device} {database} {op} {dtype}: {status}")
        if failures and not m.failures:
            click.echo(f"{m.torch_version} {m.device}: no failed pairs")


def register(group: click.Group) -> None:
    group.add_command(deps_group)
