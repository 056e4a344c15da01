"""Write every output of a run into one directory; returns the paths written.

Atomic: everything is written into a temporary sibling directory that then replaces DIR, so
a failure leaves the previous outputs (or nothing) and never a half-written set. DIR may be
new, empty or a previous selection; anything else in it is refused rather than deleted.
File-system errors are BadInput (exit 2) naming the path.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from selection.errors import BadInput
from selection.outputs.document import build_document
from selection.outputs.overlay import build_overlay
from selection.outputs.report import render_html, render_markdown
from selection.outputs.shards import actions_matrix, assign_shards
from selection.state import PipelineState


def run_as(node_id: str) -> str:
    """What pytest is given for a selected id: the id itself, or for a template that could
    not be enumerated (`...::test_foo*`) its whole instantiated class (a superset, never less)."""
    return node_id.rsplit("::", 1)[0] if node_id.endswith("*") else node_id


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
    """DIR must be absent, or a directory holding only our outputs (of the right kind)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise BadInput(f"--out {out}: exists and is not a directory")
    for entry in out.iterdir():
        if entry.name == "shards":
            if not entry.is_dir() or entry.is_symlink():
                raise BadInput(f"--out {out}: {entry} is not a directory")
            continue
        if entry.name not in FILES:
            raise BadInput(
                f"--out {out}: holds {entry.name}, which is not an output of spyre-ci select "
                "(it is replaced as a whole: choose a new or a previous selection directory)"
            )
        if entry.is_dir() or not entry.is_file():
            raise BadInput(f"--out {out}: {entry} is in the way (not a regular file)")


def write_outputs(
    state: PipelineState,
    out: Path,
    shard_count: int,
    durations: dict[str, float],
    agent: dict[str, Any],
) -> dict[str, Path]:
    check_target(out)
    ids = list(state.candidates)
    assignment, loads, basis = assign_shards(ids, shard_count, durations)
    counts = [sum(1 for s in assignment.values() if s == n + 1) for n in range(len(loads))]
    matrix = actions_matrix(loads, counts, basis)
    doc = build_document(state, assignment, agent, matrix)
    texts = {
        "selection.json": json.dumps(doc, indent=1) + "\n",
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
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        for name, text in texts.items():
            (tmp / name).write_text(text, encoding="utf-8")
        (tmp / "shards").mkdir()
        for n, text in shards.items():
            (tmp / "shards" / f"{n}.txt").write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o777 & ~_umask())
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / out.name)
            try:
                os.replace(tmp, out)
            except OSError:
                os.replace(old / out.name, out)  # put the previous outputs back
                raise
            tmp = None
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
            tmp = None
    except OSError as exc:
        where = exc.filename or out
        raise BadInput(f"--out {out}: cannot write {where}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
