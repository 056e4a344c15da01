"""report.md and a self-contained report.html (inline CSS, no scripts, no external assets)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import jinja2

from selection.agents.deterministic import PRIORITY
from selection.links.native_calls import NOTE_PREFIX
from selection.outputs.blind_spots import change_spot_groups, run_spots
from selection.stages.triage import MODE_WEIGHT

TEMPLATES = Path(__file__).with_name("templates")


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=lambda name: bool(name and name.endswith(".html.j2")),  # not the Markdown
        trim_blocks=True,
        lstrip_blocks=True,
    )


_FILTERED = re.compile(r"\b(op|module|dtype) \S+ out <- ")


def drop_reason_kind(reason: str) -> str:
    """A drop reason without the op/module/dtype it names, so that one rule is one row
    (`manifest: op <op> out <- not in global.supported_ops (...)`)."""
    return _FILTERED.sub(lambda m: f"{m.group(1)} <{m.group(1)}> out <- ", reason)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def deps_note(notes: list[str]) -> str:
    """Which recorded dependency map the run used, or why none (the selection depends on it)."""
    return _note(notes, DEPS_NOTE_PREFIX)


def calls_note(notes: list[str]) -> str:
    """Where the C++ calls between ops came from, or why there were none."""
    return _note(notes, NOTE_PREFIX)


def _note(notes: list[str], prefix: str) -> str:
    return next((n for n in notes if n.startswith(prefix)), "")


DEPS_NOTE_PREFIX = "recorded dependencies"


def report_context(doc: dict[str, Any], top: int = 15) -> dict[str, Any]:
    selected = doc["selected"]
    funnel = []
    for stage in doc["stages"]:
        counts = stage["counts"]
        value = {
            "detect": counts.get("files"),
            "map": counts.get("affected_instances", counts.get("candidates")),
            "scope": counts.get("kept"),
            "triage": counts.get("selected", counts.get("run")),
        }.get(stage["name"])
        funnel.append(
            {
                "name": stage["name"],
                "value": value,
                "counts": counts,
                "enabled": stage["enabled"],
                "seconds": stage["seconds"],
            }
        )
    widest = max(
        [f["value"] or 0 for f in funnel[1:]] + [doc["summary"]["reused_instances"] or 0, 1]
    )
    by_kind = Counter(g["kind"] for g in doc["groups"] for _ in range(g["size"]))
    templates = Counter(f"{s['class']}.{s['template']}" for s in selected)
    dtypes = Counter(s["dtype"] or "none" for s in selected)
    dropped_reasons = Counter(drop_reason_kind(d["reason"]) for d in doc["dropped"])
    shown_reasons = dropped_reasons.most_common(10)
    top_templates = templates.most_common(top)
    return {
        "doc": doc,
        "deps_note": deps_note(doc["notes"]),
        "calls_note": calls_note(doc["notes"]),
        "funnel": funnel,
        "widest": widest,
        "groups": doc["groups"][:top],
        "more_groups": max(0, len(doc["groups"]) - top),
        "by_kind": by_kind.most_common(),
        "templates": top_templates,
        "dtypes": dtypes.most_common(),
        "dropped_reasons": shown_reasons,
        # the rows not shown, so that the table always adds up to the header's count
        "more_dropped": len(doc["dropped"]) - sum(n for _, n in shown_reasons),
        "more_dropped_reasons": len(dropped_reasons) - len(shown_reasons),
        "more_templates": max(0, len(templates) - top),
        "more_templates_tests": len(selected) - sum(n for _, n in top_templates),
        "plural": plural,
        "run_spots": run_spots(doc["blind_spots"]),
        "spot_groups": change_spot_groups(doc["blind_spots"]),
        "first": [{**s, "why": why(s["causes"])} for s in selected[:top]],
        "priority": PRIORITY,  # the rank's explanation quotes them
        "mode_weight": MODE_WEIGHT,
        "ratio_pct": None if doc["summary"]["ratio"] is None else share(doc["summary"]["ratio"]),
    }


def why(causes: list[dict[str, Any]]) -> str:
    """What changed and how it reaches the test: the detect cause, then the map cause when
    it says more than the change itself (`OpInfo 'x' modified: y removed` is not followed by
    `OpInfo 'x': y removed`)."""
    detect = next((c["summary"] for c in causes if c["stage"] == "detect"), "")
    how = next((c["summary"] for c in causes if c["stage"] == "map"), "")
    said = detect.replace(" modified", "").replace(":", "")
    parts = [detect] + ([how] if how and how.replace(":", "") not in said else [])
    return " → ".join(p for p in parts if p)


def share(ratio: float) -> str:
    """`0.3 %`; a share too small to show at one decimal is `< 0.1 %`, never `0.0 %`."""
    return "< 0.1 %" if 0 < ratio < 0.0005 else f"{100 * ratio:.1f} %"


def render_markdown(doc: dict[str, Any]) -> str:
    return _environment().get_template("report.md.j2").render(**report_context(doc))


def render_html(doc: dict[str, Any]) -> str:
    return _environment().get_template("report.html.j2").render(**report_context(doc))
