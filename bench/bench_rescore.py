"""Benchmark: re-score stored mutation results with the current selector (issue 12, point 7).

A mutation's truth (the pairs whose execution it changes) depends only on the mutation and
the installed torch, not on the selector; finding it is most of bench_mutations.py's time.
So after a selection change, the rows of an earlier run (`--out` of bench_mutations.py) are
selected again, in-process as `spyre-ci select --from 2.13.0 --diff <the row's patch>` does,
in both modes (the cache's recorded map, and `--deps none`), and judged against the stored
truth. Prints the same per-kind table, the misses, and writes the rows as JSON.

A stored truth is only as wide as the pairs its run executed (capped per mutation, chosen
from what that run's selections reached): a pair newly selected is not checked, so this
measures recall on the known truth, and the selected fraction, not new misses.

Usage: python bench/bench_rescore.py RESULTS.json [RESULTS.json ...] [--ids ID,...]
           [--kinds K,...] [--cache-dir DIR] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_mutations import MODES, mode_record  # noqa: E402
from mutation_runs import VERSION, select_modes  # noqa: E402
from mutations.table import markdown, misses  # noqa: E402
from mutations.truth import is_single_op  # noqa: E402

REQUIRED = ("id", "kind", "patch", "truth")  # what re-judging a row needs


def _rows(
    paths: list[Path], ids: list[str] | None, kinds: list[str] | None
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The rows to re-select, and the chosen rows that cannot be (id -> the fields they lack:
    a `--no-truth` run stores no truth)."""
    rows: dict[str, dict[str, Any]] = {}
    unusable: dict[str, tuple[str, str]] = {}  # id -> (kind, what it lacks)
    for path in paths:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            found = doc["results"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}: not a bench_mutations.py results file ({exc})") from exc
        for number, row in enumerate(found, 1):
            fields = row if isinstance(row, dict) else {}
            name = str(fields.get("id", f"{path.name} row {number}"))
            lacking = [f for f in REQUIRED if f not in fields]
            if lacking:  # a later file's row replaces an earlier one, unusable or not
                rows.pop(name, None)
                unusable[name] = (str(fields.get("kind", "")), ", ".join(lacking))
            else:
                unusable.pop(name, None)
                rows[name] = fields

    def wanted(name: str, kind: str) -> bool:
        return (not ids or name in ids) and (not kinds or kind in kinds)

    chosen = [r for name, r in rows.items() if wanted(name, r["kind"])]
    left = {name: why for name, (kind, why) in unusable.items() if wanted(name, kind)}
    missing = sorted(set(ids or ()) - set(rows) - set(unusable))
    if missing:
        raise SystemExit(f"--ids: {missing[0]!r} is in none of the results files")
    return chosen, left


def unusable_line(unusable: dict[str, str]) -> str:
    """One line naming the rows left out, or "" for none."""
    if not unusable:
        return ""
    named = "; ".join(f"{name} (no {why})" for name, why in sorted(unusable.items()))
    return f"{len(unusable)} rows unusable, left out: {named}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--ids", type=lambda s: s.split(","), default=None)
    parser.add_argument("--kinds", type=lambda s: s.split(","), default=None)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "spyre-ci")
    parser.add_argument("--out", type=Path, help="results JSON (default under the cache)")
    args = parser.parse_args(argv)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from selection.sources.deps_store import UnusableMap, load_observed

    rows, unusable = _rows(args.results, args.ids, args.kinds)
    console = Console(stderr=True)
    if unusable:
        console.print(unusable_line(unusable), highlight=False, soft_wrap=True, markup=False)
    try:
        observed = load_observed(args.cache_dir, VERSION, "spyre")
    except UnusableMap as exc:
        console.print(f"[yellow]recorded map not used: {exc}[/]")
        observed = None
    start = time.perf_counter()
    rescored = []
    with tempfile.TemporaryDirectory(prefix="spyre-ci-rescore-") as work, Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console,
    ) as progress:  # fmt: skip
        task = progress.add_task("re-selecting", total=len(rows))
        for row in rows:
            patch = Path(work) / f"{row['id']}.patch"
            patch.write_text(row["patch"], encoding="utf-8")
            runs = select_modes(
                patch, args.cache_dir, observed, static_first=False, want_reused=False
            )
            truth = set(row["truth"])
            single = is_single_op(truth)
            modes = {mode: mode_record(run, truth, single) for mode, run in runs.items()}
            rescored.append({**row, "modes": modes})
            progress.update(task, advance=1)
    wall = time.perf_counter() - start
    shown = [m for m in MODES if any(m[0] in r["modes"] for r in rescored)]
    names = " ".join(str(p) for p in args.results)
    print(f"python bench/bench_rescore.py {names}: {len(rescored)} mutations re-selected, "
          f"wall {wall / 60:.1f} min")  # fmt: skip
    if unusable:
        print(unusable_line(unusable))
    print(markdown(rescored, shown))
    for mode, label in shown:
        found = misses(rescored, mode)
        print(f"\nmisses ({label}): {len(found)}")
        for line in found:
            print(f"  {line}")
    out = (
        args.out
        or args.cache_dir / "bench-mutations" / f"rescored-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"command": f"python bench/bench_rescore.py {names}", "wall_seconds": round(wall, 1),
           "recorded_map": observed is not None, "results": rescored}  # fmt: skip
    out.write_text(json.dumps(doc, indent=1, default=sorted) + "\n", encoding="utf-8")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
