"""The selection report that rides along with the completed callback.

The relay stores it (`selection` in the callback body, docs/callbacks.md) and the
dashboard shows it next to the run: per-stage counts, the top causes, the agent's
rationale, and the self-contained HTML report when it fits the callback.
`summarize` is pure; `attachment` reads the files `spyre-ci select` wrote.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_HTML_BYTES = 2 * 1024 * 1024  # the relay's limit for the HTML report


class BadSelection(ValueError):
    """selection.json is missing or unreadable; the message names the file."""


def summarize(selection: Mapping[str, Any]) -> dict[str, Any]:
    """`{stages, top_causes, rationale, selected, total}` from a selection.json document."""
    selected = _selected(selection)
    summary: dict[str, Any] = {
        "stages": _stages(selection),
        "top_causes": _top_causes(selection, selected),
        "selected": len(selected)
        if selected is not None
        else _int(selection.get("selected_count")),
    }
    total = _int(selection.get("total", selection.get("reused_total")))
    if total is not None:
        summary["total"] = total
    rationale = selection.get("rationale") or selection.get("agent_rationale")
    if isinstance(rationale, str) and rationale:
        summary["rationale"] = rationale
    for key in ("from", "to", "schema_version"):
        if key in selection and isinstance(selection[key], str | int):
            summary[key] = selection[key]
    return summary


def _selected(selection: Mapping[str, Any]) -> list[Any] | None:
    for key in ("selected", "tests"):
        value = selection.get(key)
        if isinstance(value, list):
            return value
    return None


def _stages(selection: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = selection.get("stages", selection.get("counts", selection.get("per_stage")))
    if isinstance(raw, Mapping):
        out = []
        for name, value in raw.items():
            kept = (
                value.get("kept", value.get("out", value.get("count")))
                if isinstance(value, Mapping)
                else value
            )
            out.append({"name": str(name), "kept": _int(kept)})
        return out
    if isinstance(raw, list):
        return [
            {
                "name": str(item.get("name", "stage")),
                "kept": _int(item.get("kept", item.get("count"))),
            }
            for item in raw
            if isinstance(item, Mapping)
        ]
    return []


def _top_causes(selection: Mapping[str, Any], selected: list[Any] | None) -> list[dict[str, Any]]:
    given = selection.get("top_causes")
    if isinstance(given, list):
        return [
            dict(c) if isinstance(c, Mapping) else {"cause": str(c), "count": None}
            for c in given[:10]
            if isinstance(c, Mapping | str)
        ]
    counts: Counter[str] = Counter()
    for test in selected or []:
        if isinstance(test, Mapping):
            cause = test.get("cause") or (test.get("causes") or [None])[0]
            if isinstance(cause, Mapping):
                cause = (
                    cause.get("summary") or cause.get("change") or json.dumps(cause, sort_keys=True)
                )
            if cause:
                counts[str(cause)] += 1
    return [{"cause": cause, "count": count} for cause, count in counts.most_common(10)]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
