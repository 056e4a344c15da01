"""Benchmark: what reading a module's symbols and fingerprinting them costs, against a revision.

The detect stage reads every changed module's symbols (`selection.pyast.module_symbols`) and
fingerprints each symbol it compares, on a cold run over ~1,000 files; the link summaries
read every module's symbols too. This measures both on large installed torch files, for the
working tree's `selection` and for another revision's (extracted with `git archive`), in one
process, interleaved, as a CPU-time ratio.

Usage: python bench/bench_fingerprint_cost.py [--against REV] [--repeats 5] [FILE ...]
  FILE: paths under the installed torch package (default: four large modules)
"""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
FILES = (
    "testing/_internal/common_methods_invocations.py",
    "_refs/__init__.py",
    "_inductor/config.py",
    "nn/functional.py",
)


def load_pyast(root: Path) -> ModuleType:
    """`selection.pyast` as found under `root` (a fresh import: no module of another tree)."""
    for name in [m for m in sys.modules if m == "selection" or m.startswith("selection.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("selection.pyast")
    finally:
        sys.path.remove(str(root))


def extract(revision: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "selection"], check=True, capture_output=True
    ).stdout
    tar = into / "selection.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as opened:
        opened.extractall(into, filter="data")
    return into


def cost(pyast: ModuleType, sources: dict[str, tuple[str, ast.Module]]) -> float:
    started = time.process_time()
    for text, tree in sources.values():
        for symbol in pyast.module_symbols(tree, text).values():
            symbol.fingerprint()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="HEAD~1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("files", nargs="*", default=list(FILES))
    args = parser.parse_args()
    import torch

    package = Path(torch.__file__).parent
    sources = {}
    for name in args.files:
        text = (package / name).read_text(encoding="utf-8")
        sources[name] = (text, ast.parse(text))
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"working tree": ROOT, args.against: extract(args.against, Path(scratch))}
        modules = {label: load_pyast(root) for label, root in trees.items()}
        totals = dict.fromkeys(modules, 0.0)
        for _ in range(args.repeats):
            for label, module in modules.items():
                totals[label] += cost(module, sources)
    for label, total in totals.items():
        print(f"{label}: {total / args.repeats:.3f} s CPU per pass over {len(sources)} files")
    base = totals[args.against]
    print(f"ratio working tree / {args.against}: {totals['working tree'] / base:.2f}")


if __name__ == "__main__":
    main()
