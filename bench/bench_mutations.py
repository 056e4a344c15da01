"""Benchmark: the selection's recall, measured by mutating torch 2.13.0 (issue 12, point 7).

Generates mutations of the installed torch 2.13.0's Python sources and of the wheel's
native_functions.yaml / derivatives.yaml across every link kind (bench/mutations), plus
behaviour-free and other-device-only edits, deterministically from a seed. Each mutation is
a patch onto the 2.13.0 release mirror, selected in-process as `spyre-ci select --from
2.13.0 --diff m.patch` does, twice: with the recorded dependency map of the cache (`map`)
and with `--deps none` (`static`). Ground truth comes from execution where it can
(bench/mutations/truth.py says how the pairs to run are chosen and what is relied on): the
same patch applied to a scratch copy of the installed torch's Python sources first on
PYTHONPATH, the pairs' samples digested before and after on the reference device. Prints per
kind: caught (share of the truth selected), the mutations with a miss, the selected fraction
of the reused instances (mean / max) and CPU seconds per select, both modes side by side;
writes every figure as JSON under <cache>/bench-mutations/.

Usage: python bench/bench_mutations.py [--quick] [--seed 0] [--kinds K,...] [--ids ID,...] [--cap 10]
           [--controls 2] [--cache-dir DIR] [--out FILE.json] [--no-truth]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from mutation_runs import (  # noqa: E402
    VERSION,
    ModeRun,
    TruthRunner,
    calibrate,
    probe,
    select_modes,
)
from mutations.catalog import FULL_PLAN, QUICK_PLAN, generate, mutated_text  # noqa: E402
from mutations.edits import unified_patch  # noqa: E402
from mutations.model import DECORATION, EXECUTION, Mutation, Site  # noqa: E402
from mutations.op_list_sites import FILES as OP_LIST_FILES  # noqa: E402
from mutations.sites import kind_of  # noqa: E402
from mutations.table import exclusions, markdown, misses  # noqa: E402
from mutations.truth import (  # noqa: E402
    Instance,
    OpFacts,
    Pair,
    RunPlan,
    declared_truth,
    execution_truth,
    forward_only,
    is_single_op,
    isolated_check,
    joint_graph_suspects,
    judge,
    own_op,
    pair_key,
    pair_paths,
    plan_run,
    unstable_pairs,
)
from mutations.yaml_sites import DERIVATIVES, NATIVE  # noqa: E402

MODES = (("map", "recorded map"), ("static", "--deps none"))


def _wanted(path: str) -> bool:
    if path in (NATIVE, DERIVATIVES):
        return True
    return path.endswith(".py") and (
        kind_of(path) is not None
        or path == "torch/version.py"
        or path in OP_LIST_FILES
        or path.startswith("torch/testing/_internal/")
    )


def release_sources(cache: Path) -> dict[str, str]:
    """The files mutations go into, from the 2.13.0 release mirror (what the patch applies to)."""
    from selection.sources.mirror import Mirror

    mirror = Mirror(cache)
    revision = mirror.ensure(VERSION, None)
    git_dir = str(mirror.repo.git_dir)
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", revision.sha],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")  # fmt: skip
    sources = {}
    for path in filter(_wanted, listing):
        shown = subprocess.run(
            ["git", "--git-dir", git_dir, "show", f"{revision.sha}:{path}"],
            capture_output=True, check=True,
        )  # fmt: skip
        sources[path] = shown.stdout.decode("utf-8")
    return sources


def check_installed(sources: dict[str, str], torch_root: Path) -> None:
    """The truth runs the installed torch: its files must be the release's."""
    import torch

    if not torch.__version__.startswith(VERSION):
        raise SystemExit(f"installed torch is {torch.__version__}, the benchmark needs {VERSION}")
    for path, text in sources.items():
        installed = torch_root / path
        if not installed.is_file() or installed.read_text(encoding="utf-8") != text:
            raise SystemExit(f"{installed}: differs from the {VERSION} release mirror")


def _reached(observed: Any, reused: list[Instance], facts: OpFacts) -> Any:
    """Whether an in-scope pair (for a DecorateInfo: a reused instance) can be affected:
    for code, whether one executed it per the recorded map (None without a map)."""
    in_scope = {i.pair for i in reused if i.pair is not None}
    ops = {p[1] for p in in_scope}
    templates = {(i.test_class, i.template) for i in reused}

    def reached(site: Site) -> bool | None:
        spec = site.truth
        if spec.mode == EXECUTION:
            if observed is None or site.symbol == "<module>":
                return None
            return bool(_ran(observed, site.path, site.symbol) & in_scope)
        if spec.ops:
            wanted = {own_op(op) for op in spec.ops}
            return any({own_op(a) for a in facts.aten_names.get(op, ())} & wanted for op in ops)
        if spec.mode == DECORATION:
            named = any(
                spec.test_class in (None, c) and spec.test_name in (None, t) for c, t in templates
            )
            return named and any(e in ops for e in spec.entries)
        return any(e in ops for e in spec.entries) if spec.entries else None

    return reached


def _executed(
    mutation: Mutation, observed: Any, in_scope: set[Pair], import_time: set[str]
) -> set[Pair] | None:
    function = mutation.function
    if observed is None or function is None or f"{function[0]}::{function[1]}" in import_time:
        return None
    return _ran(observed, *function) & in_scope


def _ran(observed: Any, path: str, symbol: str) -> set[Pair]:
    """The pairs that ran a function in any path: a decomposition runs only where its op is
    compiled, and the truth runs the compiled paths too."""
    return set(observed.pairs_running_function(path, symbol)) | set(
        observed.pairs_running_function(path, symbol, compiled=True)
    )


def mode_record(run: ModeRun, truth: set[str], single: bool) -> dict[str, Any]:
    verdict = judge(truth, run.selected)
    return {
        "selected": len(run.selected.node_ids),
        "fraction": run.selected.fraction,
        "caught": sorted(verdict.caught),
        "missed": sorted(verdict.missed),
        "canary_only": sorted(verdict.canary_only),
        "no_effect": list(run.selected.no_effect[:3]),
        "no_effect_total": len(run.selected.no_effect),
        "blind_spots": list(run.selected.blind_spots[:3]),
        "cpu_seconds": round(run.cpu_seconds, 2),
        "wall_seconds": round(run.wall_seconds, 2),
        "single_op": single,
    }


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        from selection.sources.deps_store import UnusableMap, load_observed
        from spyre_ci.deps.scope import installed_torch_root

        self.args = args
        self.cache: Path = args.cache_dir
        torch_root = installed_torch_root()
        self.sources = release_sources(self.cache)
        check_installed(self.sources, torch_root)
        try:
            self.observed = load_observed(self.cache, VERSION, "spyre")
        except UnusableMap as exc:  # the recorded mode is then static, and says so
            print(f"recorded map not used: {exc}", file=sys.stderr)
            self.observed = None
        self.work = Path(tempfile.mkdtemp(prefix="spyre-ci-mutations-"))
        self.reused = calibrate(self.sources, self.work, self.cache)
        self.in_scope = sorted({i.pair for i in self.reused if i.pair is not None})
        self.scope = set(self.in_scope)
        self.paths = pair_paths(self.reused)
        # Pairs the recorder could not run cannot be run by the truth either (same runner).
        failed = set(self.observed.failed) if self.observed is not None else set()
        self.runnable = [p for p in self.in_scope if p not in failed]
        self.import_time, self.facts = probe(self.in_scope)
        self.truth = None if args.no_truth else TruthRunner(self.work / "scratch", self.cache)
        self.results: list[dict[str, Any]] = []

    def mutations(self) -> list[Mutation]:
        plan = dict(QUICK_PLAN if self.args.quick else FULL_PLAN)
        if self.args.kinds:
            plan = {k: v for k, v in plan.items() if k in self.args.kinds}
        reached = _reached(self.observed, self.reused, self.facts)
        found = generate(self.sources, plan, self.args.seed, reached)
        if self.args.ids:
            known = {m.id for m in found}
            missing = sorted(set(self.args.ids) - known)
            if missing:
                raise SystemExit(
                    f"--ids: no mutation {missing[0]!r} in the catalog (seed {self.args.seed})"
                )
            found = [m for m in found if m.id in self.args.ids]
        return found

    def run(self, mutations: list[Mutation], log: Any) -> None:
        pool = ThreadPoolExecutor(max_workers=1)  # the truth runs beside the selection
        pending: list[tuple[dict[str, Any], RunPlan, Future[Any]]] = []
        for index, mutation in enumerate(mutations):
            record, plan, future = self._one(index, mutation, pool)
            self.results.append(record)
            if future is not None and plan is not None:
                pending.append((record, plan, future))
            log(f"{mutation.id}: selected {record['selected_counts']}")
        if self.truth is not None and pending:
            self._judge_executions(pending, pool, log)
        pool.shutdown()

    def _one(
        self, index: int, mutation: Mutation, pool: ThreadPoolExecutor
    ) -> tuple[dict[str, Any], RunPlan | None, Future[Any] | None]:
        text = mutated_text(mutation, self.sources)
        patch = self.work / f"{mutation.id}.patch"
        patch.write_text(
            unified_patch(mutation.path, self.sources[mutation.path], text), encoding="utf-8"
        )
        runs = select_modes(
            patch, self.cache, self.observed, index % 2 == 0, mutation.truth.mode == "decoration"
        )
        record: dict[str, Any] = {
            "id": mutation.id, "kind": mutation.kind, "group": mutation.group,
            "path": mutation.path, "symbol": mutation.symbol, "operator": mutation.operator,
            "summary": mutation.summary(), "expect": mutation.expect, "reached": mutation.reached,
            "truth_mode": mutation.truth.mode, "truth_why": mutation.truth.why,
            "patch": patch.read_text(encoding="utf-8"), "runs": runs,
            "selected_counts": {m: len(r.selected.node_ids) for m, r in runs.items()},
        }  # fmt: skip
        if mutation.truth.mode != EXECUTION:
            reused = runs["static"].reused
            truth = declared_truth(mutation.truth, self.in_scope, reused, self.facts)
            self._finish(record, truth)
            return record, None, None
        executed = _executed(mutation, self.observed, self.scope, self.import_time)
        selected = {m: set(r.selected.pairs) for m, r in runs.items()}
        plan = plan_run(
            executed,
            selected,
            self.runnable,
            self.args.cap,
            self.args.controls,
            f"{self.args.seed}:{mutation.id}",
        )
        record["run"] = {"pairs": len(plan.pairs), "population": plan.population, "basis": plan.basis,
                         "executed": None if executed is None else len(executed)}  # fmt: skip
        if self.truth is None or not plan.pairs:
            self._finish(record, set())
            return record, None, None
        future = pool.submit(self.truth.after, mutation.path, text, plan.pairs)
        record["executed_pairs"] = executed
        record["mutated_text"] = text
        return record, plan, future

    def _judge_executions(
        self,
        pending: list[tuple[dict[str, Any], RunPlan, Future[Any]]],
        pool: ThreadPoolExecutor,
        log: Any,
    ) -> None:
        union = sorted({p for _, plan, _ in pending for p in plan.pairs})
        assert self.truth is not None
        first, second = pool.submit(self.truth.baseline, union, log).result()
        unstable = unstable_pairs(first, second)
        self.unstable = sorted(unstable)
        for record, _plan, future in pending:
            after, seconds = future.result()
            changes = execution_truth(first, after, unstable, self.paths)
            executed = record.pop("executed_pairs")
            text = record.pop("mutated_text")
            suspects = changes.truth - (executed if executed is not None else changes.truth)
            alone = (
                pool.submit(self.truth.alone, record["path"], text, sorted(suspects)).result()
                if suspects
                else {}
            )  # through the pool: one process at a time edits the scratch copy
            order_only = isolated_check(suspects, first, alone)
            joint = joint_graph_suspects(changes, first, after, self.paths, self.facts.backward)
            forward = (
                pool.submit(self.truth.forward_compiled, record["path"], text, sorted(joint))
                if joint
                else None
            )
            joint_only = forward_only(joint, *forward.result()) if forward is not None else set()
            truth = changes.truth - order_only - joint_only
            record["run"].update(
                seconds=round(seconds, 1),
                unstable=[pair_key(p) for p in sorted(unstable & set(after))],
                changed_without_executing=sorted(pair_key(p) for p in suspects - order_only),
                changed_only_beside_other_pairs=sorted(pair_key(p) for p in order_only),
                changed_only_in_paths_no_test_runs=sorted(pair_key(p) for p in changes.unreached),
                changed_only_compiled_with_gradients=sorted(pair_key(p) for p in joint_only),
            )
            self._finish(record, {pair_key(p) for p in truth})

    def _finish(self, record: dict[str, Any], truth: set[str]) -> None:
        runs: dict[str, ModeRun] = record.pop("runs")
        record["truth"] = sorted(truth)
        single = is_single_op(truth)
        record["modes"] = {mode: mode_record(run, truth, single) for mode, run in runs.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two mutations per kind (make bench)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", type=lambda s: s.split(","), default=None)
    parser.add_argument(
        "--ids",
        type=lambda s: s.split(","),
        default=None,
        help="only these mutations of the full catalog (meta-02,python-ref-20): re-run misses",
    )
    parser.add_argument(
        "--cap", type=int, default=None, help="pairs run per mutation (10; quick 6)"
    )
    parser.add_argument("--controls", type=int, default=2, help="random control pairs per mutation")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "spyre-ci")
    parser.add_argument("--out", type=Path, help="results JSON (default under the cache)")
    parser.add_argument("--no-truth", action="store_true", help="selection only, no execution")
    args = parser.parse_args(argv)
    if args.ids:
        args.kinds = sorted({i.rsplit("-", 1)[0] for i in args.ids})
    unknown = sorted(set(args.kinds or ()) - set(FULL_PLAN))
    if unknown:
        parser.error(f"--kinds: unknown kind {unknown[0]!r} (known: {', '.join(FULL_PLAN)})")
    args.cap = args.cap or (6 if args.quick else 10)
    return _main(args)


def _main(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    start = time.perf_counter()
    bench = Bench(args)
    try:
        mutations = bench.mutations()
        if bench.observed is None:
            console.print(
                "[yellow]no recorded map for torch 2.13.0 on spyre in the cache: static "
                "mode only, truth restricted to selected pairs and controls[/]"
            )
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as progress:  # fmt: skip
            task = progress.add_task("mutations", total=len(mutations))

            def log(message: str) -> None:
                progress.update(task, advance=1 if not message.startswith("baseline") else 0)
                progress.console.log(message)

            bench.run(mutations, log)
        return _report(args, bench, time.perf_counter() - start)
    finally:
        shutil.rmtree(bench.work, ignore_errors=True)


def _report(args: argparse.Namespace, bench: Bench, wall: float) -> int:
    modes = [m for m in MODES if any(m[0] in r["modes"] for r in bench.results)]
    table = markdown(bench.results, modes)
    command = "python bench/bench_mutations.py" + (" --quick" if args.quick else "")
    if args.ids:
        command += f" --ids {','.join(args.ids)}"
    elif args.kinds:
        command += f" --kinds {','.join(args.kinds)}"
    print(f"{command}: {len(bench.results)} mutations, seed {args.seed}, cap {args.cap} pairs, "
          f"wall {wall / 60:.1f} min")  # fmt: skip
    print(table)
    for mode, label in modes:
        found = misses(bench.results, mode)
        print(f"\nmisses ({label}): {len(found)}")
        for line in found:
            print(f"  {line}")
    print("\nleft out of the truth:")
    for line in exclusions(bench.results) or ["nothing"]:
        print(f"  {line}")
    unstable = getattr(bench, "unstable", [])
    print(
        f"\nunstable pairs (left out of the truth): {len(unstable)}"
        + (f": {', '.join(':'.join(p) for p in unstable[:10])}" if unstable else "")
    )
    out = (
        args.out
        or bench.cache / "bench-mutations" / f"results-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"command": command, "seed": args.seed, "cap": args.cap, "controls": args.controls,
           "wall_seconds": round(wall, 1), "recorded_map": bench.observed is not None,
           "unstable": [":".join(p) for p in unstable], "results": bench.results}  # fmt: skip
    out.write_text(json.dumps(doc, indent=1, default=sorted) + "\n", encoding="utf-8")
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
