"""The upstream change that made the selection choose a test: its suspect change (pure).

`spyre-ci ci report` sends, with the selection summary, the cause chain of every failed
test the selection chose (`summary.causes_by_test`, from selection.json
`selected[].causes[] = {stage, kind, summary[, evidence]}`). The detect link names the
upstream change, the map link how it reaches the test. Everything is read defensively:
a summary of another shape (a CRCR downstream's, an older spyre-ci's) has no suspect.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MAX_TEXT = 300


def causes_by_test(summary_text: str | None) -> Mapping[str, Any]:
    try:
        data = json.loads(summary_text) if summary_text else {}
    except ValueError:
        return {}
    found = data.get("causes_by_test") if isinstance(data, dict) else None
    return found if isinstance(found, dict) else {}


def selection_range(summary_text: str | None) -> tuple[str | None, str | None]:
    """(base, head) SHAs the selection compared, when its summary names them."""
    try:
        data = json.loads(summary_text) if summary_text else {}
    except ValueError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    return _sha(data.get("base")), _sha(data.get("head"))


def suspect_change(chain: Any) -> dict[str, Any] | None:
    """`{change, via, evidence, chain}` from one test's cause chain, or None."""
    links = [c for c in chain if isinstance(c, Mapping)] if isinstance(chain, list) else []
    if not links:
        return None
    detect = next((c for c in links if c.get("stage") == "detect"), None)
    mapped = next((c for c in links if c.get("stage") == "map"), None)
    change = _text((detect or links[0]).get("summary"))
    if change is None:
        return None
    return {
        "change": change,
        "kind": _text((detect or links[0]).get("kind")),
        "via": _text(mapped.get("summary")) if mapped else None,
        "evidence": _text(mapped.get("evidence")) if mapped else None,
        "chain": [{k: _text(c.get(k)) for k in ("stage", "kind", "summary")} for c in links[:8]],
    }


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "\u2026"


def _sha(value: Any) -> str | None:
    if (
        isinstance(value, str)
        and 7 <= len(value) <= 64
        and all(c in "0123456789abcdef" for c in value)
    ):
        return value
    return None
