"""The recording worker: `python -m spyre_ci.deps.worker [options]`, one device process.

Imports torch. Reads pairs as JSON lines on stdin (`["opinfo", "add", "float16"]`) and
answers each with one JSON line on stdout: the pair's row of the `spyre-ci/deps` document
(`database`, `op`, `dtype`, `status`, `aten`, `functions`) plus `steps`, `errors` (steps that
raised: part of the behaviour, not a failure) and `seconds`. Anything torch or the backend
prints goes to stderr, so stdout carries only answers. `spyre-ci deps record` runs --jobs of
these and restarts one that dies or hangs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import torch

from spyre_ci.deps import ALL_PATHS, COMPILED_PATHS
from spyre_ci.deps.execute import Entries, Pair, error_head, open_device, pair_steps, run_steps
from spyre_ci.deps.garbage import Collector, close_window, open_window
from spyre_ci.deps.memos import Footprint, MemoLedger
from spyre_ci.deps.paths import RunSettings, Step
from spyre_ci.deps.probes import PythonCalls, aten_ops, python_calls
from spyre_ci.deps.symbols import CodeKey, SymbolResolver


def _run(steps: Iterable[Step]) -> tuple[int, int]:
    """(steps run, steps that raised)."""
    count = errors = 0
    for result in run_steps(iter(steps)):
        count += 1
        errors += bool(result.error)
    return count, errors


class _UntilCompiled:
    """The steps up to the first of a compiled path, which it keeps in `rest`."""

    def __init__(self, steps: Iterator[Step]) -> None:
        self.steps = steps
        self.rest: list[Step] = []

    def __iter__(self) -> Iterator[Step]:
        for step in self.steps:
            if step.path in COMPILED_PATHS:
                self.rest.append(step)
                return
            yield step


@contextmanager
def _window(aten: set[str], calls: PythonCalls) -> Iterator[None]:
    """The probes, fenced from the collector (spyre_ci.deps.garbage): what earlier windows
    left is out of reach, and what this one left unreachable is freed while they watch."""
    open_window()
    with aten_ops(aten), python_calls(calls):
        yield
        close_window()


def observe(thunk: Callable[[], object]) -> Footprint:
    """What `thunk` executes, seen by the same probes as a pair's steps."""
    aten: set[str] = set()
    calls = PythonCalls()
    with _window(aten, calls):  # a footprint is kept for every later pair
        thunk()
    return Footprint(frozenset(calls.code_keys()), frozenset(aten))


# One per device process: memos outlive pairs (spyre_ci.deps.memos).
LEDGER = MemoLedger(observe=observe)
COLLECTOR = Collector()


def record_pair(
    entries: Entries, pair: Pair, settings: RunSettings, resolver: SymbolResolver
) -> dict[str, Any]:
    aten: set[str] = set()
    compiled_aten: set[str] = set()
    calls, compiled_calls = PythonCalls(), PythonCalls()
    # so memoized code is credited to every pair relying on it
    LEDGER.before_pair()
    COLLECTOR.between_pairs()
    uses = [LEDGER.uses()]
    status, steps, errors = "ok", 0, 0
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        # Steps are planned as they run (a backward step exists once its forward ran), the
        # eager paths first: what runs from the first compiled step on counts as compiled.
        planned = iter(pair_steps(entries, pair, settings))
        eager = _UntilCompiled(planned)
        with _window(aten, calls):
            steps, errors = _run(eager)
        uses.append(LEDGER.uses())
        with _window(compiled_aten, compiled_calls):
            more, more_errors = _run(itertools.chain(eager.rest, planned))
        uses.append(LEDGER.uses())
        steps, errors = steps + more, errors + more_errors
    except Exception as exc:  # the pair's set-up failed (unknown entry, sample generation)
        status = error_head(exc)
    if status == "ok" and steps == 0:
        status = "error: no samples"
    ok = status == "ok"
    eager_memos = LEDGER.credit(uses[0], uses[1]) if ok else Footprint()
    compiled_memos = LEDGER.credit(uses[1], uses[2]) if ok else Footprint()
    aten |= eager_memos.aten
    compiled_aten |= compiled_memos.aten
    functions = _names(calls.code_keys() | eager_memos.code, resolver)
    compiled = _names(compiled_calls.code_keys() | compiled_memos.code, resolver)
    return {
        "database": pair[0],
        "op": pair[1],
        "dtype": pair[2],
        "status": status,
        "aten": sorted(aten) if ok else [],
        "functions": sorted(functions) if ok else [],
        "compiled_aten": sorted(compiled_aten - aten) if ok else [],
        "compiled_functions": sorted(compiled - functions) if ok else [],
        "steps": steps,
        "errors": errors,
        "seconds": round(time.perf_counter() - started, 3),
        "cpu_seconds": round(time.process_time() - cpu_started, 3),
    }


def _names(keys: Iterable[CodeKey], resolver: SymbolResolver) -> set[str]:
    return {f for key in keys if (f := resolver.resolve(key))}


def torch_root() -> Path:
    """The directory that holds the imported `torch` package."""
    return Path(torch.__file__).resolve().parent.parent


def _answers() -> IO[str]:
    """A private copy of stdout for answers; fd 1 itself then points at stderr."""
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def parse_settings(argv: list[str] | None = None) -> tuple[argparse.Namespace, RunSettings]:
    parser = argparse.ArgumentParser(prog="python -m spyre_ci.deps.worker")
    parser.add_argument("--backend-module", default="torch_spyre_ref")
    parser.add_argument("--compile-backend", default="spyre")
    parser.add_argument("--max-samples", type=int, default=32)
    parser.add_argument("--compile-samples", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paths", default=",".join(ALL_PATHS))
    args = parser.parse_args(argv)
    paths = tuple(p for p in args.paths.split(",") if p)
    unknown = sorted(set(paths) - set(ALL_PATHS))
    if unknown:  # the truth's forward-only probe is no path a recording runs
        parser.error(f"--paths: {unknown[0]!r} is not recorded (known: {', '.join(ALL_PATHS)})")
    device = open_device(args.backend_module)
    settings = RunSettings(
        device=device,
        compile_backend=args.compile_backend,
        max_samples=args.max_samples,
        compile_samples=args.compile_samples,
        seed=args.seed,
        paths=paths,
    )
    return args, settings


def main(argv: list[str] | None = None) -> int:
    answers = _answers()
    _, settings = parse_settings(argv)
    entries = Entries()
    resolver = SymbolResolver(torch_root())
    hello = {
        "device": settings.device,
        "torch_version": torch.__version__,
        "torch_git_version": torch.version.git_version,
    }
    answers.write(json.dumps({"hello": hello}) + "\n")
    answers.flush()
    warmed = False
    for line in sys.stdin:
        if not line.strip():
            continue
        database, op, dtype = json.loads(line)
        pair = (database, op, dtype)
        row = record_pair(entries, pair, settings, resolver)
        if not warmed:
            row = _after_warmup(row, record_pair(entries, pair, settings, resolver))
            warmed = True
        answers.write(json.dumps(row) + "\n")
        answers.flush()
    return 0


def _after_warmup(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """The second recording of the first pair, with what only the first one ran (this
    process's lazy imports and first-use initialisation) as `baseline`: what its eager paths
    ran apart from what only its compiled paths ran (the compiler's lazy imports serve the
    pairs that compile, not every eager test)."""
    baseline: dict[str, list[str]] = {}
    for kind in ("aten", "functions"):
        again = set(second[kind]) | set(second[f"compiled_{kind}"])
        eager = set(first[kind]) - again
        baseline[kind] = sorted(eager)
        baseline[f"compiled_{kind}"] = sorted(set(first[f"compiled_{kind}"]) - again - eager)
    second["baseline"] = baseline
    return second


if __name__ == "__main__":
    raise SystemExit(main())
