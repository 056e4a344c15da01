"""Per-kind figures of a benchmark run, side by side for the selection modes. Pure.

A result is the JSON-able record bench_mutations.py writes per mutation:
`{"id", "kind", "expect", "truth": [keys], "modes": {mode: {"selected", "fraction",
"caught": [keys], "missed": [keys], "canary_only": [keys], "no_effect_total",
"cpu_seconds", "single_op"}}}`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Result = Mapping[str, Any]


@dataclass(frozen=True)
class KindFigures:
    mutations: int
    with_truth: int  # mutations whose truth is not empty
    truth_items: int
    caught_items: int
    canary_only_items: int
    missed: tuple[str, ...]  # ids of the mutations with a miss
    fraction_mean: float
    fraction_max: float
    seconds_mean: float
    quiet: int  # selected nothing and gave a no-effect reason

    @property
    def caught_share(self) -> float | None:
        return self.caught_items / self.truth_items if self.truth_items else None


def figures(results: Sequence[Result], mode: str) -> KindFigures:
    rows = [r for r in results if mode in r["modes"]]
    runs = [r["modes"][mode] for r in rows]
    fractions = [run["fraction"] for run in runs] or [0.0]
    return KindFigures(
        mutations=len(rows),
        with_truth=sum(1 for r in rows if r["truth"]),
        truth_items=sum(len(r["truth"]) for r in rows),
        caught_items=sum(len(run["caught"]) for run in runs),
        canary_only_items=sum(len(run["canary_only"]) for run in runs),
        missed=tuple(r["id"] for r, run in zip(rows, runs, strict=True) if run["missed"]),
        fraction_mean=statistics.fmean(fractions),
        fraction_max=max(fractions),
        seconds_mean=statistics.fmean([run["cpu_seconds"] for run in runs] or [0.0]),
        quiet=sum(1 for run in runs if run["selected"] == 0 and run["no_effect_total"] > 0),
    )


def by_kind(results: Sequence[Result]) -> dict[str, list[Result]]:
    grouped: dict[str, list[Result]] = {}
    for result in results:
        grouped.setdefault(result["kind"], []).append(result)
    return grouped


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _cell(f: KindFigures, quiet_kind: bool) -> list[str]:
    if quiet_kind:
        caught = f"nothing selected, with reason: {f.quiet}/{f.mutations}"
    else:
        caught = f"{_percent(f.caught_share)} ({f.caught_items}/{f.truth_items})"
        if f.canary_only_items:
            caught += f", {f.canary_only_items} by canary only"
    misses = ", ".join(f.missed) if f.missed else "0"
    selected = f"{100 * f.fraction_mean:.2f} / {100 * f.fraction_max:.2f} %"
    return [caught, misses, selected, f"{f.seconds_mean:.1f}"]


def single_op_mean(results: Sequence[Result], mode: str) -> tuple[float, int]:
    """Mean selected fraction over single-op mutations (the ≤ 2 % target), and how many."""
    values = [
        r["modes"][mode]["fraction"]
        for r in results
        if mode in r["modes"] and r["modes"][mode].get("single_op")
    ]
    return (statistics.fmean(values) if values else 0.0), len(values)


def markdown(results: Sequence[Result], modes: Sequence[tuple[str, str]]) -> str:
    """One row per kind; per mode (key, label): caught, mutations with a miss, selected
    fraction of the reused instances (mean / max), CPU seconds per select."""
    header = ["kind", "mutations", "with truth"]
    for _, label in modes:
        header += [
            f"{label}: caught",
            f"{label}: with a miss",
            f"{label}: selected mean / max",
            f"{label}: s/select",
        ]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    grouped = by_kind(results)
    for kind, rows in grouped.items():
        quiet_kind = all(r["expect"] == "nothing" for r in rows)
        first = figures(rows, modes[0][0])
        cells = [kind, str(first.mutations), "-" if quiet_kind else str(first.with_truth)]
        for key, _ in modes:
            cells += _cell(figures(rows, key), quiet_kind)
        lines.append("| " + " | ".join(cells) + " |")
    total = ["all", str(len(results)), str(sum(1 for r in results if r["truth"]))]
    for key, _ in modes:
        semantic = [r for r in results if r["expect"] != "nothing"]
        f = figures(semantic, key)
        mean, count = single_op_mean(results, key)
        total += [
            f"{_percent(f.caught_share)} ({f.caught_items}/{f.truth_items})",
            str(len(f.missed)),
            f"{100 * f.fraction_mean:.2f} / {100 * f.fraction_max:.2f} % (single-op: {100 * mean:.2f} % over {count})",
            f"{f.seconds_mean:.1f}",
        ]
    lines.append("| " + " | ".join(total) + " |")
    return "\n".join(lines)


def misses(results: Sequence[Result], mode: str, limit: int = 6) -> list[str]:
    """One line per mutation with a miss: what was mutated and the pairs not selected."""
    found = []
    for r in results:
        run = r["modes"].get(mode)
        if run and run["missed"]:
            shown = ", ".join(k.split(":", 1)[1] for k in sorted(run["missed"])[:limit])
            more = len(run["missed"]) - limit
            found.append(
                f"{r['id']} {r['summary']}: missed {shown}" + (f" (+{more})" if more > 0 else "")
            )
    return found


# What a run's record says it left out of the truth, and why (bench/mutations/truth.py).
EXCLUSIONS = (
    (
        "changed_only_in_paths_no_test_runs",
        "changed only in paths no in-scope test of the pair runs (compiled: none traces; "
        "backward: none computes gradients)",
    ),
    (
        "changed_only_compiled_with_gradients",
        "changed only where compiled with gradients (a forward-only compile does not see it), "
        "no in-scope test of the pair traces with gradients",
    ),
    ("changed_only_beside_other_pairs", "changed only beside other pairs, not when run alone"),
)


def exclusions(results: Sequence[Result]) -> list[str]:
    """One line per reason: how many pairs over how many mutations, and a few of them."""
    lines = []
    for key, why in EXCLUSIONS:
        hits = [(r["id"], k) for r in results for k in r.get("run", {}).get(key, ())]
        if hits:
            shown = ", ".join(f"{i} {k.split(':', 1)[1]}" for i, k in hits[:4])
            mutations = len({i for i, _ in hits})
            lines.append(f"{why}: {len(hits)} pairs in {mutations} mutations ({shown}, ...)")
    return lines
