"""Estimate: would recording a FakeTensor path apart from torch.compile narrow an upgrade?

The recorder runs each pair's samples through torch.compile, and `select` credits what only
that compiled path ran to every instance that traces its op -- `test_fake`,
`test_fake_autocast`, `test_pointwise_ops` and `test_python_ref_meta` included, which run the
op under FakeTensorMode and never compile. A FakeTensor path recorded apart would credit
Dynamo's and Inductor's code to the instances that compile only. This experiment tells
whether that would take tests off a given upgrade: for a sample of the recorded pairs it
runs each pair's first samples under FakeTensorMode the way `test_fake` does (inputs
converted with `from_tensor`, the op called in the mode) and counts the functions the
upgrade changed (compared as `spyre-ci select` compares them: selection.pyast) that this
fake run executes beyond the pair's eager paths. A pair whose fake run executes none would
leave the fake templates' selection; one that executes some stays, whatever the split.

Only the calling thread is profiled (no backward runs here). Needs the installed torch to
be the base release and a recorded map (`spyre-ci deps record`).

Usage: python bench/bench_fake_reach.py [--base torch-2.13.0] [--head torch-2.14.0]
           [--pairs 30] [--samples 8] [--seed 1]
"""

from __future__ import annotations

import argparse
import ast
import collections
import itertools
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CACHE = Path.home() / ".cache" / "spyre-ci"
NESTED = ".<locals>."


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(mirror), *args], check=True, capture_output=True, text=True
    ).stdout


def changed_functions(mirror: Path, base: str, head: str) -> set[str]:
    """`path::qualname` of every function and method under torch/ whose code differs
    between the two tags, as the detect stage compares code (annotations, docstrings and
    formatting left out)."""
    from selection.pyast import module_symbols, same_code

    changed: set[str] = set()
    paths = _git(mirror, "diff", "--name-only", base, head, "--", "torch/").split()
    for path in (p for p in paths if p.endswith(".py")):
        try:
            texts = [_git(mirror, "show", f"{ref}:{path}") for ref in (base, head)]
            old, new = (module_symbols(ast.parse(t), t) for t in texts)
        except (subprocess.CalledProcessError, SyntaxError):
            continue  # added or removed on one side, or unparseable: not a modified function
        for name, symbol in old.items():
            other = new.get(name)
            if symbol.kind in ("function", "method") and other and not same_code(symbol, other):
                changed.add(f"{path}::{name}")
    return changed


def enclosing(name: str) -> str:
    """`path::f.<locals>.g` -> `path::f`: a nested function's edit is its factory's."""
    return name.split(NESTED, 1)[0]


def fake_run(op: Any, device: str, dtype: Any, samples: int) -> set[str]:
    """The functions (map names) a `test_fake`-like run of the op executes."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._pytree import tree_map

    from spyre_ci.deps.probes import PythonCalls
    from spyre_ci.deps.symbols import SymbolResolver
    from spyre_ci.deps.worker import _names, _window, torch_root

    inputs = list(itertools.islice(op.sample_inputs(device, dtype, requires_grad=False), samples))
    calls, aten = PythonCalls(), set[str]()
    with _window(aten, calls):
        for sample in inputs:
            mode = FakeTensorMode()

            def fake(value: Any, mode: Any = mode) -> Any:
                return mode.from_tensor(value) if isinstance(value, torch.Tensor) else value

            try:
                args = tree_map(fake, (sample.input, sample.args, sample.kwargs))
                with mode:
                    op(args[0], *args[1], **args[2])
            except Exception:  # an op the fake mode refuses still ran code
                continue
    return _names(calls.code_keys(), SymbolResolver(torch_root()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="torch-2.13.0")
    parser.add_argument("--head", default="torch-2.14.0")
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    args = parser.parse_args()

    from importlib.metadata import version

    from selection.sources.deps_store import load_observed
    from spyre_ci.deps.execute import Entries, dtype_of, open_device

    started = time.process_time()
    changed = changed_functions(args.cache_dir / "mirror", args.base, args.head)
    observed = load_observed(args.cache_dir, version("torch"), "spyre")
    if observed is None:
        raise SystemExit(f"no recorded map in {args.cache_dir}: run `spyre-ci deps record` first")
    pairs = sorted(p for p in observed.recorded if p[0] == "opinfo")
    sample = random.Random(args.seed).sample(pairs, min(args.pairs, len(pairs)))
    print(f"{len(changed)} functions changed {args.base} -> {args.head}; {len(sample)} pairs")
    device, entries = open_device("torch_spyre_ref"), Entries()
    tables = observed.tables()
    left = 0
    in_fake: collections.Counter[str] = collections.Counter()
    print("pair | changed, eager | ... compiled only | ... fake beyond eager")
    for pair in sample:
        ran = {
            kind: {name for name, pairs in tables[kind].items() if pair in pairs}
            for kind in ("functions", "compiled_functions")
        }
        fake = fake_run(entries.find("opinfo", pair[1]), device, dtype_of(pair[2]), args.samples)
        eager = {enclosing(n) for n in ran["functions"]} & changed
        compiled = ({enclosing(n) for n in ran["compiled_functions"]} & changed) - eager
        beyond = ({enclosing(n) for n in fake} & changed) - eager
        in_fake.update(beyond)
        left += not (eager or beyond)
        print(f"{'/'.join(pair)} | {len(eager)} | {len(compiled)} | {len(beyond)}")
    print(
        f"pairs whose fake run executes no changed function (would leave): {left} of {len(sample)}"
    )
    print("changed functions the fake runs execute most:")
    for name, count in in_fake.most_common(12):
        print(f"  {count:3d}  {name}")
    print(f"{time.process_time() - started:.1f} s CPU")


if __name__ == "__main__":
    main()
