"""Benchmark `spyre-ci select --from 2.13 --to 2.14` on real release sources.

Cold: an empty cache (pip fetches both wheels from the configured package indexes, sources are
extracted and committed to a fresh mirror, every changed file is parsed). Warm: the same
command again on that cache. Prints wall and CPU time (user + system of the run, which the
machine's load does not inflate), peak memory (max RSS), candidate instances in scope, the
number selected and the ratio to the full reused set. With a recorded dependency map in the
default cache (`spyre-ci deps record`), a third run uses it (copied into the bench's cache).

Targets (issue 12): warm <= 30 s of CPU and <= 1 GiB on the backend-sized scope.

Usage: python bench/bench_select.py [--from 2.13] [--to 2.14] [--keep-cache DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ONE_RUN = """
import resource, sys
from spyre_ci.cli import cli
try:
    cli(sys.argv[1:], prog_name="spyre-ci", standalone_mode=True)
except SystemExit as exit:
    code = exit.code or 0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"PEAK_RSS_KB {max(me.ru_maxrss, kids.ru_maxrss)}", file=sys.stderr)
print(f"CPU_SECONDS {me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime:.2f}", file=sys.stderr)
sys.exit(code)
"""

DEFAULT_CACHE = Path.home() / ".cache" / "spyre-ci"


def _reported(stderr: str, key: str) -> float:
    return next(
        (float(line.split()[1]) for line in stderr.splitlines() if line.startswith(key)), 0.0
    )


def run_once(args: list[str]) -> tuple[float, float, int, int, str]:
    """(wall seconds, CPU seconds, peak RSS KiB, exit code, stderr)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", ONE_RUN, *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    cpu = _reported(done.stderr, "CPU_SECONDS")
    peak = int(_reported(done.stderr, "PEAK_RSS_KB"))
    return wall, cpu, peak, done.returncode, done.stderr


def figures(out: Path) -> dict[str, object]:
    doc = json.loads((out / "selection.json").read_text())
    scope = next(s for s in doc["stages"] if s["name"] == "scope")["counts"]
    summary = doc["summary"]
    return {
        "base": doc["base"]["version"],
        "head": doc["head"]["version"],
        "changed_files": summary["changed_files"],
        "reused": summary["reused_instances"],
        "in_scope": scope["kept"],
        "selected": summary["selected"],
        "ratio": summary["ratio"],
        "stage_seconds": {s["name"]: s["seconds"] for s in doc["stages"]},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--from", dest="from_", default="2.13")
    parser.add_argument("--to", default="2.14")
    parser.add_argument("--keep-cache", type=Path, help="use this cache dir and keep it")
    options = parser.parse_args()
    cache = options.keep_cache or Path(tempfile.mkdtemp(prefix="spyre-ci-bench-cache-"))
    out = Path(tempfile.mkdtemp(prefix="spyre-ci-bench-out-"))
    args = [
        "select", "--from", options.from_, "--to", options.to, "--cache-dir", str(cache),
        "--out", str(out), "--quiet",
        "--no-fetch-tests",  # no network to GitHub here: fail fast, not a measured cost
    ]  # fmt: skip
    runs = [("cold", ["--deps", "none"]), ("warm", ["--deps", "none"])]
    if sorted((DEFAULT_CACHE / "deps").glob("*.sqlite")):
        shutil.copytree(DEFAULT_CACHE / "deps", cache / "deps", dirs_exist_ok=True)
        runs.append(("warm, recorded map", ["--deps", "auto"]))
    try:
        results: dict[str, tuple[float, int]] = {}
        for label, extra in runs:
            wall, cpu, peak, code, stderr = run_once([*args, *extra])
            if code not in (0, 4):
                print(stderr[-3000:], file=sys.stderr)
                return 1
            results[label] = (cpu, peak)
            found = figures(out)
            print(
                f"{label}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {peak / 1024:.0f} MiB, "
                f"selected {found['selected']} of {found['reused']} reused ({found['ratio']}), "
                f"stage seconds {found['stage_seconds']}",
                flush=True,
            )
        print(
            f"compared torch {found['base']} -> {found['head']}: {found['changed_files']} changed files"
        )
        for label, (cpu, peak) in results.items():
            if label.startswith("warm"):
                ok = cpu <= 30 and peak <= 1024 * 1024
                print(f"target ({label}): <= 30 s CPU and <= 1 GiB: {'met' if ok else 'MISSED'}")
        return 0
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if options.keep_cache is None:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
