"""Benchmark of `spyre-ci deps record` (observed dependencies).

1. Probe overhead, side by side in one process: a sample of in-scope pairs run through every
   path (eager, variants, backward, torch.compile) with no probe, with each way of seeing
   Python code (cProfile's C profiler, a `sys.setprofile` callback, coverage.py dynamic
   contexts), with the ATen probe (Kineto), and with what `record` uses (Kineto + cProfile).
   Rounds rotate the order; figures are process CPU seconds (the machine is shared), as
   ratios to no probe.
2. The whole in-scope set: `spyre-ci deps record --jobs 2` into a scratch cache; wall time,
   the workers' CPU seconds, and the projection to 1,000 pairs on 2 cores (target <= 20 min).

Usage: python bench/bench_deps.py [--only overhead|scope] [--pairs N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TARGET_MINUTES = 20.0


def _setprofile_probe() -> AbstractContextManager[None]:
    @contextmanager
    def probe() -> Iterator[None]:
        seen: set[object] = set()

        def tracer(frame: Any, event: str, arg: object) -> None:
            if event == "call":
                seen.add(frame.f_code)

        sys.setprofile(tracer)
        try:
            yield
        finally:
            sys.setprofile(None)

    return probe()


def _coverage_probe(cov: Any, label: str) -> AbstractContextManager[None]:
    @contextmanager
    def probe() -> Iterator[None]:
        cov.start()
        cov.switch_context(label)
        try:
            yield
        finally:
            cov.stop()

    return probe()


def _probes(torch_dir: str) -> dict[str, Callable[[str], AbstractContextManager[Any]]]:
    from spyre_ci.deps.probes import PythonCalls, aten_ops, python_calls

    @contextmanager
    def chosen() -> Iterator[None]:
        with aten_ops(set()), python_calls(PythonCalls()):
            yield

    probes: dict[str, Callable[[str], AbstractContextManager[Any]]] = {
        "no probe": lambda _label: nullcontext(),
        "python: cProfile (chosen)": lambda _label: python_calls(PythonCalls()),
        "python: sys.setprofile callback": lambda _label: _setprofile_probe(),
        "aten: Kineto profiler (chosen)": lambda _label: aten_ops(set()),
        "record: Kineto + cProfile": lambda _label: chosen(),
    }
    try:
        import coverage
    except ImportError:
        print("coverage is not installed: its row is left out (pip install coverage)")
    else:
        cov = coverage.Coverage(data_file=None, include=[f"{torch_dir}/*"], branch=False)
        probes["python: coverage.py dynamic contexts"] = lambda label: _coverage_probe(cov, label)
    return probes


def overhead(pair_count: int, rounds: int) -> None:
    import torch

    from spyre_ci.deps.execute import Entries, open_device, pair_steps, run_steps
    from spyre_ci.deps.paths import RunSettings
    from spyre_ci.deps.scope import installed_torch_root, reused_pairs

    device = open_device("torch_spyre_ref")
    pairs = reused_pairs(None, installed_torch_root())
    step = max(1, len(pairs) // pair_count)
    sample = pairs[::step][:pair_count]
    settings = RunSettings(device=device)
    entries = Entries()
    probes = _probes(str(Path(torch.__file__).parent))

    def run(pair: tuple[str, str, str]) -> None:
        for _ in run_steps(pair_steps(entries, pair, settings)):
            pass

    for pair in sample:  # warm-up: lazy imports and first compilations out of the figures
        run(pair)
    seconds: dict[str, list[float]] = {name: [] for name in probes}
    names = list(probes)
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        for name in order:
            start = time.process_time()
            for pair in sample:
                with probes[name]("/".join(pair)):
                    run(pair)
            seconds[name].append(time.process_time() - start)
    base = statistics.median(seconds["no probe"])
    print(f"probe overhead: {len(sample)} in-scope pairs x {rounds} rounds, every path, "
          f"process CPU seconds per round (median), torch {torch.__version__}")  # fmt: skip
    for name in names:
        value = statistics.median(seconds[name])
        print(f"  {name:40s} {value:7.2f} s  x{value / base:5.2f}")


def scope(jobs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-deps-") as cache:
        command = [sys.executable, "-m", "spyre_ci", "deps", "record", "--cache-dir", cache,
                   "--jobs", str(jobs), "--quiet", "--out", f"{cache}/map.json"]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(command, check=True, cwd=REPO)
        wall = time.perf_counter() - start
        doc = json.loads(Path(cache, "map.json").read_text())
    rows = doc["pairs"]
    cpu = sum(r.get("cpu_seconds", 0.0) for r in rows)
    failed = [r for r in rows if r["status"] != "ok"]
    functions = statistics.median(len(r["functions"]) for r in rows if r["status"] == "ok")
    per_pair = cpu / max(1, len(rows))
    projected = per_pair * 1000 / jobs / 60
    print(f"whole in-scope set: {len(rows)} pairs ({len(failed)} failed), --jobs {jobs}")
    print(f"  wall {wall:.0f} s; workers' CPU {cpu:.0f} s ({per_pair:.2f} s per pair, "
          f"warm-ups included); median {functions:.0f} functions per pair")  # fmt: skip
    print(f"  projected for 1,000 pairs on {jobs} cores: {projected:.1f} min "
          f"(target <= {TARGET_MINUTES:.0f} min)")  # fmt: skip
    for row in failed[:10]:
        print(f"  failed: {row['database']} {row['op']} {row['dtype']}: {row['status']}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["overhead", "scope"])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if args.only in (None, "overhead"):
        overhead(args.pairs, args.rounds)
    if args.only in (None, "scope"):
        scope(args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
