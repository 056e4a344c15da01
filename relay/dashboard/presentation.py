"""How results are shown (pure): conclusion colours and symbols, event labels,
and a tolerant reading of a selection summary uploaded by a downstream."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Look:
    css: str  # class suffix: state-<css>
    symbol: str  # never colour alone: a symbol for colour-blind readers and print
    label: str


LOOKS: dict[str, Look] = {
    "success": Look("success", "✓", "success"),
    "failure": Look("failure", "✗", "failure"),
    "startup_failure": Look("failure", "✗", "startup failure"),
    "timed_out": Look("timedout", "◔", "timed out"),
    "cancelled": Look("muted", "⊘", "cancelled"),
    "skipped": Look("muted", "↷", "skipped"),
    "neutral": Look("muted", "○", "neutral"),
    "stale": Look("muted", "○", "stale"),
    "action_required": Look("timedout", "!", "action required"),
    "in_progress": Look("running", "●", "in progress"),
    "queued": Look("queued", "◌", "dispatched, no callback yet"),
    # A failure kind shown in place of "failure" (relay/results/classify.py).
    "infrastructure": Look("infra", "⚙", "infrastructure failure"),
}
UNKNOWN = Look("muted", "?", "unknown")

CONCLUSIONS = tuple(k for k in LOOKS if k not in ("in_progress", "queued", "infrastructure"))
# The backend page's ?kind= filter: job_runs.failure_kind.
FAILURE_KINDS = ("test", "infrastructure", "timeout", "cancelled", "unclassified")
KIND_LABELS = {
    "test": "test failures",
    "infrastructure": "infrastructure (checkout, install, selection, runner)",
    "timeout": "timeouts",
    "cancelled": "cancelled",
    "unclassified": "failures without steps (CRCR)",
}

# URL filter value -> stored event types.
EVENT_FILTERS: dict[str, tuple[str, ...]] = {
    "pr": ("pull_request",),
    "push": ("push",),
    "nightly": ("nightly", "periodic"),
}
EVENT_LABELS = {"pull_request": "PR", "push": "push", "nightly": "nightly", "periodic": "periodic"}

LEVEL_ORDER = ("L4", "L3", "L2", "L1")


def look(state: str | None) -> Look:
    return LOOKS.get(state or "", UNKNOWN)


def job_state(status: str | None, conclusion: str | None, kind: str | None = None) -> str:
    """The display state of a job row: its conclusion once completed (an infrastructure
    failure shown as such), else `in_progress`."""
    if status == "completed":
        if kind == "infrastructure" and conclusion not in ("success", "skipped", "neutral"):
            return "infrastructure"
        return conclusion or "neutral"
    return "in_progress"


def event_label(event_type: str | None) -> str:
    return EVENT_LABELS.get(event_type or "", event_type or "event")


def selection_digest(summary_text: str | None) -> dict[str, Any]:
    """Normalise a stored selection summary to `{stages, top_causes, rationale, selected, total}`.

    The summary comes from a downstream, so it is read defensively: unknown
    shapes give empty fields, never an error page. Accepted shapes: `stages` (or `per_stage`, docs/callbacks.md) as
    a list of `{name, kept|count|tests}` or a `{name: count}` map; `top_causes`
    (or `causes`) as `{cause|name, count|tests}` items or strings; `rationale`
    (or `agent_rationale`) as text.
    """
    try:
        data = json.loads(summary_text) if summary_text else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    return {
        "stages": _stages(data.get("stages", data.get("per_stage"))),
        "top_causes": _causes(data.get("top_causes", data.get("causes")))[:5],
        "rationale": _text(data.get("rationale", data.get("agent_rationale"))),
        "selected": _int(data.get("selected")),
        "total": _int(data.get("total")),
    }


def _stages(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, dict):
        return [{"name": str(k), "kept": _int(v)} for k, v in raw.items()]
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if isinstance(item, dict):
            kept = item.get("kept", item.get("count", item.get("tests")))
            out.append({"name": _text(item.get("name")) or "stage", "kept": _int(kept)})
    return out


def _causes(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        return []
    out: list[dict[str, Any]] = []
    for item in raw:
        if isinstance(item, str):
            out.append({"cause": item, "count": None})
        elif isinstance(item, dict):
            count = _int(item.get("count", item.get("tests")))
            out.append({"cause": _text(item.get("cause", item.get("name"))) or "?", "count": count})
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
