"""Write every output of a run into one directory; returns the paths written.

Everything is written in full into a temporary sibling directory first, then renamed into
place (DIR itself when it is new; else each output, `shards/` as a whole), so a failure
leaves the previous outputs (or nothing), never a half-written file or shard set. Other
entries of DIR (e.g. a CI step's plan.json) are left alone; an output name taken by
something of the wrong kind is refused before anything is written. File-system errors are
BadInput (exit 2) naming the path.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from selection.errors import BadInput
from selection.outputs.document import build_document, run_as
from selection.outputs.json_text import readable
from selection.outputs.overlay import build_overlay
from selection.outputs.report import render_html, render_markdown
from selection.outputs.shards import actions_matrix, assign_shards
from selection.state import PipelineState


def _lines(ids: list[str]) -> str:
    return "".join(f"{i}\n" for i in dict.fromkeys(run_as(i) for i in ids))


FILES = (
    "selection.json",
    "selected.txt",
    "manifest.yaml",
    "matrix.json",
    "report.md",
    "report.html",
)


def check_target(out: Path) -> None:
    """DIR must be absent or a directory whose output names, if taken, are of the right kind,
    and the directory it is written in (through a temporary sibling) must take new entries."""
    parent = staging_parent(out)
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent  # the outputs create the missing directories
    if not parent.is_dir():
        raise BadInput(f"--out {out}: {parent} is not a directory")
    _probe(out, parent)
    if not out.exists():
        return
    if not out.is_dir():
        raise BadInput(f"--out {out}: exists and is not a directory")
    _probe(out, out)  # its files are replaced in place
    shards = out / "shards"
    if shards.exists() and (not shards.is_dir() or shards.is_symlink()):
        raise BadInput(f"--out {out}: {shards} is in the way (not a directory)")
    for name in FILES:
        entry = out / name
        if entry.exists() and (entry.is_dir() or not entry.is_file()):
            raise BadInput(f"--out {out}: {entry} is in the way (not a regular file)")


def staging_parent(out: Path) -> Path:
    """Where the outputs are put together before they are renamed into place: DIR's parent
    as written (`--out .` and `--out x` both stage in the working directory)."""
    return out.parent.absolute()


def _probe(out: Path, directory: Path) -> None:
    """Create and remove a directory where the outputs will be made: what would stop them
    (permissions, a read-only or virtual file system) is said before the analysis."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{out.name}.probe-", dir=directory))
    except OSError as exc:
        raise BadInput(
            f"--out {out}: cannot create it in {directory}: {exc.strerror or exc}"
        ) from exc


def write_outputs(
    state: PipelineState,
    out: Path,
    shard_count: int,
    durations: dict[str, float],
    agent: dict[str, Any],
) -> dict[str, Path]:
    check_target(out)
    ids = list(state.candidates)
    assignment, loads, basis = assign_shards(ids, shard_count, durations, run_as)
    counts = [sum(1 for s in assignment.values() if s == n + 1) for n in range(len(loads))]
    matrix = actions_matrix(loads, counts, basis)
    doc = build_document(state, assignment, agent, matrix)
    texts = {
        "selection.json": readable(doc, depth=2) + "\n",
        "selected.txt": _lines(ids),
        "manifest.yaml": build_overlay(
            state.candidates, state.request.base.label, state.request.head.label
        ),
        "matrix.json": json.dumps(matrix) + "\n",
        "report.md": render_markdown(doc),
        "report.html": render_html(doc),
    }
    # ids are in rank order; every shard 1..N gets a file, an empty one included
    shards = {n: _lines([i for i in ids if assignment[i] == n]) for n in range(1, len(loads) + 1)}
    _write_atomically(out, texts, shards)
    return {name: out / name for name in FILES}


def _write_atomically(out: Path, texts: dict[str, str], shards: dict[int, str]) -> None:
    tmp: Path | None = None
    try:
        staging = staging_parent(out)
        staging.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=staging))
        new = tmp / "new"
        new.mkdir()
        for name, text in texts.items():
            (new / name).write_text(text, encoding="utf-8")
        (new / "shards").mkdir()
        for n, text in shards.items():
            (new / "shards" / f"{n}.txt").write_text(text, encoding="utf-8")
        if not out.exists():
            os.replace(new, out)
            return
        old_shards = out / "shards"
        if old_shards.exists():
            os.replace(old_shards, tmp / "old-shards")
        try:
            os.replace(new / "shards", old_shards)
        except OSError:
            if (tmp / "old-shards").exists():
                os.replace(tmp / "old-shards", old_shards)
            raise
        for name in FILES:
            os.replace(new / name, out / name)
    except OSError as exc:
        where = exc.filename or out
        raise BadInput(f"--out {out}: cannot write {where}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
