"""Run every benchmark script under bench/ (files named bench_*.py) and let each print its figures.

bench_mutations.py runs in its quick mode (two mutations per kind); `make bench-mutations`
runs it in full.

Usage: python bench/run_all.py [NAME_SUBSTRING ...]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Arguments a script runs with here; the full run is its own make target (make bench-mutations).
ARGUMENTS = {"bench_mutations.py": ["--quick"]}


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        scripts = [s for s in scripts if any(a in s.name for a in argv)]
    if not scripts:
        print("no benchmark matched", file=sys.stderr)
        return 2
    failed = []
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        start = time.perf_counter()
        command = [sys.executable, str(script), *ARGUMENTS.get(script.name, [])]
        rc = subprocess.call(command, cwd=HERE.parent)
        print(f"=== {script.name}: exit {rc} in {time.perf_counter() - start:.1f} s", flush=True)
        if rc != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
