"""Benchmark `spyre-ci select --from 2.13 --to 2.14` on real release sources.

Cold: an empty cache (pip fetches both wheels from the configured package indexes, sources are
extracted and committed to a fresh mirror). Warm: the same command again on that cache.
Prints wall time, peak memory (max RSS of the run and its children), candidate instances in
scope, the number selected and the ratio to the full reused set.

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
self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"PEAK_RSS_KB {max(self_kb, child_kb)}", file=sys.stderr)
sys.exit(code)
"""


def run_once(args: list[str]) -> tuple[float, int, int, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", ONE_RUN, *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    peak = next(
        (
            int(line.split()[1])
            for line in done.stderr.splitlines()
            if line.startswith("PEAK_RSS_KB")
        ),
        0,
    )
    return wall, peak, done.returncode, done.stderr


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
        "select",
        "--from",
        options.from_,
        "--to",
        options.to,
        "--cache-dir",
        str(cache),
        "--out",
        str(out),
        "--quiet",
    ]
    try:
        results = {}
        for label in ("cold", "warm"):
            wall, peak, code, stderr = run_once(args)
            if code not in (0, 4):
                print(stderr[-3000:], file=sys.stderr)
                return 1
            results[label] = (wall, peak)
            print(f"{label}: wall {wall:.1f} s, peak RSS {peak / 1024:.0f} MiB", flush=True)
        found = figures(out)
        print(
            f"compared torch {found['base']} -> {found['head']}: {found['changed_files']} changed files"
        )
        print(
            f"full reused set: {found['reused']} instances; candidates in scope: {found['in_scope']}; "
            f"selected: {found['selected']}; ratio: {found['ratio']}"
        )
        print(f"stage seconds (warm): {found['stage_seconds']}")
        warm_wall, warm_peak = results["warm"]
        ok = warm_wall < 60 and warm_peak < 2 * 1024 * 1024
        print(f"target warm < 60 s and < 2 GiB: {'met' if ok else 'MISSED'}")
        return 0
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if options.keep_cache is None:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
