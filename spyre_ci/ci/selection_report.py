"""The selection report that rides along with the completed callback.

The relay stores it (`selection` in the callback body, docs/callbacks.md) and the
dashboard shows it next to the run: tests kept per stage, the top causes, the
agent's rationale, and the self-contained HTML report when it fits the callback.
`summarize` (pure) reads `spyre-ci select`'s selection.json (docs/selection.md);
`attachment` reads the files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MAX_HTML_BYTES = 2 * 1024 * 1024  # the relay's limit for the HTML report
TOP_CAUSES = 5
MAX_TESTS_WITH_CAUSES = 200  # failed tests whose cause chain goes along (the suspect change)
MAX_CAUSES = 8
MAX_CAUSE_TEXT = 300
# The count that says what each stage kept (selection.json `stages[].counts`).
STAGE_KEPT = {
    "detect": "files",
    "map": "affected_instances",
    "scope": "kept",
    "triage": "selected",
}


class BadSelection(ValueError):
    """selection.json is unreadable; the message names the file."""


def summarize(selection: Mapping[str, Any], failed: Sequence[str] = ()) -> dict[str, Any]:
    """`{stages, top_causes, rationale, selected, total, base, head}` for the dashboard, and
    `causes_by_test`: the cause chain of each `failed` test the selection chose (why it
    ran: the upstream change that is the suspect)."""
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
    chains = causes_by_test(selection, failed)
    if chains:
        out["causes_by_test"] = chains
    return out


def causes_by_test(selection: Mapping[str, Any], failed: Sequence[str]) -> dict[str, Any]:
    """`{failed test id: [{stage, kind, summary[, evidence]}]}` from `selected[].causes`.

    Read defensively (the cause chain keeps its shape `{stage, kind, summary}`; a map
    cause may carry `evidence`): a failed instance matches its own selected id, or a
    `...::test_foo*` pattern id (a template selected as a whole) it starts with.
    """
    exact: dict[str, list[dict[str, Any]]] = {}
    patterns: list[tuple[str, list[dict[str, Any]]]] = []
    table = selection.get("evidence")
    evidence = table if isinstance(table, Mapping) else {}
    for entry in selection.get("selected") or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
            continue
        chain = _chain(entry.get("causes"), evidence)
        if entry["id"].endswith("*"):
            patterns.append((entry["id"][:-1], chain))
        else:
            exact[entry["id"]] = chain
    out: dict[str, Any] = {}
    for test_id in failed:
        if len(out) >= MAX_TESTS_WITH_CAUSES:
            break
        found = exact.get(test_id)
        if found is None:
            found = next((c for prefix, c in patterns if test_id.startswith(prefix)), None)
        if found:
            out[test_id] = found
    return out


def _chain(raw: Any, table: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A cause's evidence is inline (`evidence`) or named in the document's table
    (`evidence_id` -> `evidence[id]`, the hops of the chain)."""
    chain = []
    for cause in raw if isinstance(raw, list) else []:
        if not isinstance(cause, Mapping):
            continue
        link = {k: _short(cause.get(k)) for k in ("stage", "kind", "summary")}
        evidence = cause.get("evidence")
        ref = cause.get("evidence_id")
        named = table.get(ref) if isinstance(ref, str) else None
        if isinstance(named, list):
            evidence = " -> ".join(str(hop) for hop in named)
        if evidence not in (None, "", [], {}):
            text = evidence if isinstance(evidence, str) else json.dumps(evidence, default=str)
            link["evidence"] = _short(text)
        chain.append(link)
    return chain[:MAX_CAUSES]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return text if len(text) <= MAX_CAUSE_TEXT else text[: MAX_CAUSE_TEXT - 1] + "\u2026"


def _stage(stage: Mapping[str, Any]) -> dict[str, Any]:
    name = str(stage.get("name", "stage"))
    counts = _mapping(stage.get("counts"))
    return {"name": name, "kept": _int(counts.get(STAGE_KEPT.get(name, ""))), "counts": counts}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def attachment(selection_dir: Path, failed: Sequence[str] = ()) -> dict[str, Any] | None:
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
    out: dict[str, Any] = {"summary": summarize(data, failed)}
    html = selection_dir / "report.html"
    if html.exists() and html.stat().st_size <= MAX_HTML_BYTES:
        out["html"] = html.read_text(errors="replace")
    return out
