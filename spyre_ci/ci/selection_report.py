"""The selection report that rides along with the completed callback.

The relay stores it (`selection` in the callback body, docs/callbacks.md) and the
dashboard shows it next to the run: tests kept per stage, the top causes, the
agent's rationale, and the self-contained HTML report when it fits the callback.
`summarize` (pure) reads `spyre-ci select`'s selection.json (docs/selection.md);
`attachment` reads the files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_HTML_BYTES = 2 * 1024 * 1024  # the relay's limit for the HTML report
TOP_CAUSES = 5
# The count that says what each stage kept (selection.json `stages[].counts`).
STAGE_KEPT = {
    "detect": "files",
    "map": "affected_instances",
    "scope": "kept",
    "triage": "selected",
}


class BadSelection(ValueError):
    """selection.json is unreadable; the message names the file."""


def summarize(selection: Mapping[str, Any]) -> dict[str, Any]:
    """`{stages, top_causes, rationale, selected, total, base, head}` for the dashboard."""
    summary = _mapping(selection.get("summary"))
    groups = [g for g in selection.get("groups") or [] if isinstance(g, Mapping)]
    groups.sort(key=lambda g: -_int(g.get("size")))
    out: dict[str, Any] = {
        "stages": [_stage(s) for s in selection.get("stages") or [] if isinstance(s, Mapping)],
        "top_causes": [
            {"cause": str(g.get("cause", "")), "count": _int(g.get("size"))}
            for g in groups[:TOP_CAUSES]
        ],
        "selected": _int(summary.get("selected", len(selection.get("selected") or []))),
        "total": _int(summary.get("reused_instances")),
        "base": _mapping(selection.get("base")).get("sha"),
        "head": _mapping(selection.get("head")).get("sha"),
    }
    rationale = [
        f"{g.get('decision', 'run')} {_int(g.get('size'))}: {g.get('rationale')}"
        for g in groups[:TOP_CAUSES]
        if g.get("rationale")
    ]
    if rationale:
        out["rationale"] = "; ".join(rationale)
    if selection.get("blind_spots"):
        out["blind_spots"] = selection["blind_spots"]
    return out


def _stage(stage: Mapping[str, Any]) -> dict[str, Any]:
    name = str(stage.get("name", "stage"))
    counts = _mapping(stage.get("counts"))
    return {"name": name, "kept": _int(counts.get(STAGE_KEPT.get(name, ""))), "counts": counts}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def attachment(selection_dir: Path) -> dict[str, Any] | None:
    """The callback's `selection` object, or None when the selection did not run."""
    path = selection_dir / "selection.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise BadSelection(f"{path}: cannot read the selection ({exc})") from exc
    if not isinstance(data, Mapping):
        raise BadSelection(f"{path}: the top level is not an object")
    out: dict[str, Any] = {"summary": summarize(data)}
    html = selection_dir / "report.html"
    if html.exists() and html.stat().st_size <= MAX_HTML_BYTES:
        out["html"] = html.read_text(errors="replace")
    return out
