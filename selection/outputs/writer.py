"""Write every output of a run into one directory; returns the paths written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def write_outputs(
    state: PipelineState,
    out: Path,
    shard_count: int,
    durations: dict[str, float],
    agent: dict[str, Any],
) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    ids = list(state.candidates)
    assignment, loads, basis = assign_shards(ids, shard_count, durations)
    counts = [sum(1 for s in assignment.values() if s == n + 1) for n in range(len(loads))]
    matrix = actions_matrix(loads, counts, basis)
    doc = build_document(state, assignment, agent, matrix)
    paths = {
        "selection.json": out / "selection.json",
        "selected.txt": out / "selected.txt",
        "manifest.yaml": out / "manifest.yaml",
        "matrix.json": out / "matrix.json",
        "report.md": out / "report.md",
        "report.html": out / "report.html",
    }
    paths["selection.json"].write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    paths["selected.txt"].write_text(_lines(ids), encoding="utf-8")
    shard_dir = out / "shards"
    shard_dir.mkdir(exist_ok=True)
    for stale in shard_dir.glob("*.txt"):
        stale.unlink()
    for n in range(1, len(loads) + 1):
        lines = [i for i in ids if assignment[i] == n]  # ids are in rank order
        (shard_dir / f"{n}.txt").write_text(_lines(lines), encoding="utf-8")
    paths["manifest.yaml"].write_text(
        build_overlay(state.candidates, state.request.base.label, state.request.head.label),
        encoding="utf-8",
    )
    paths["matrix.json"].write_text(json.dumps(matrix) + "\n", encoding="utf-8")
    paths["report.md"].write_text(render_markdown(doc), encoding="utf-8")
    paths["report.html"].write_text(render_html(doc), encoding="utf-8")
    return paths
