"""Balance the selected tests over N shards by recorded durations (falling back to counts).

Pure. Longest-processing-time-first: tests sorted by duration (unknown durations count as
the median of the known ones, or 1 s when none is known), each placed on the currently
lightest shard. Within a shard the triage ranking is kept (likely failures first).
"""

from __future__ import annotations

import heapq
import json
import statistics
from collections.abc import Callable
from pathlib import Path

from selection.errors import BadInput


def load_durations(path: Path | None) -> dict[str, float]:
    """A JSON object {node id: seconds}, e.g. built from a previous run's JUnit report."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BadInput(f"--durations {path}: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, (int, float)) for v in data.values()):
        raise BadInput(f"--durations {path}: expected a JSON object mapping test ids to seconds")
    return {str(k): float(v) for k, v in data.items()}


def assign_shards(
    ids: list[str],
    shards: int,
    durations: dict[str, float],
    unit_of: Callable[[str], str] = lambda i: i,
) -> tuple[dict[str, int], list[float], str]:
    """({id: shard 1..N}, estimated seconds per shard, "durations" | "counts"). Ids with the
    same `unit_of` (what pytest is given: a whole class for `Class::test_foo*`) share a shard,
    so no unit runs twice."""
    shards = max(1, shards)
    known = [durations[i] for i in ids if i in durations]
    basis = "durations" if known else "counts"
    default = statistics.median(known) if known else 1.0
    units: dict[str, list[str]] = {}
    for test_id in ids:
        units.setdefault(unit_of(test_id), []).append(test_id)
    cost = {u: sum(durations.get(i, default) for i in members) for u, members in units.items()}
    heap = [(0.0, n) for n in range(1, shards + 1)]
    heapq.heapify(heap)
    assignment: dict[str, int] = {}
    loads = [0.0] * shards
    for unit in sorted(units, key=lambda u: (-cost[u], u)):
        load, shard = heapq.heappop(heap)
        assignment.update(dict.fromkeys(units[unit], shard))
        loads[shard - 1] = load + cost[unit]
        heapq.heappush(heap, (loads[shard - 1], shard))
    return assignment, [round(x, 1) for x in loads], basis


def actions_matrix(loads: list[float], counts: list[int], basis: str) -> dict[str, object]:
    """`strategy.matrix` for GitHub Actions: `matrix: ${{ fromJSON(needs.select.outputs.matrix) }}`.
    Balanced by counts (no durations known), a shard's load is a test count, not seconds:
    its `estimated_seconds` is null. With nothing selected `include` is empty, which
    GitHub refuses as a matrix: gate the test jobs on `select`'s exit 4."""
    return {
        "include": [
            {
                "shard": n + 1,
                "tests": counts[n],
                "estimated_seconds": loads[n] if basis == "durations" else None,
                "balanced_by": basis,
            }
            for n in range(len(loads))
            if counts[n] > 0
        ]
    }
