"""Benchmark: does the 2.13 -> 2.14 selection hold the tests other backends really saw break?

Out-of-tree backends record the upstream tests that started failing when they moved to a new
torch. `bench/data/failures-2.13-2.14.jsonl` holds such records for the 2.13 -> 2.14 upgrade,
gathered from public sources, each with its provenance (`source_repo`, `source_path`,
`source_commit` or the issue, `reason`, `confidence`):
- Intel XPU (intel/torch-xpu-ops): tests whose XPU copies were re-synced after an upstream
  change between the release/2.13 and release/2.14 branch points, and the "[release/2.14]"
  regression issues ("passed in 2.13 but fail in 2.14");
- Ascend NPU (Ascend/pytorch): tests added to the shared disabled list after master moved to
  torch 2.14 (weaker evidence: dates only).
A record names the upstream test file, class and test as that backend instantiates it
(`TestCommonXPU::test_python_ref__refs_fft_fft_xpu_float16`); it is renamed for this device
(`XPU`/`PRIVATEUSE1`/`NPU` -> the device's class suffix, `_xpu`/`_npu`/`_privateuse1` -> its
test suffix) and looked up among the instances the manifests reuse. Substring records (an
op's name without dtype) match every reused instance containing them.

For each record in the reused scope: is it selected? Per mode (the recorded map, `--deps
none`). Records outside the scope (files or ops the manifests do not reuse) say nothing
about the selection and are only counted; records about another upgrade than `--from`/`--to`
(their `torch_from`/`torch_to`) are left out, with a line saying so. A random selection of the
same size is the comparison: it selects all k instances of a record with probability about
s**k (s the selected share), not s.

Usage: python bench/bench_failure_records.py [--records FILE] [--from 2.13] [--to 2.14]
           [--cache-dir DIR] [--modes map,static]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RECORDS = ROOT / "bench" / "data" / "failures-2.13-2.14.jsonl"
_CLASS_DEVICES = re.compile(r"(XPU|PRIVATEUSE1|NPU)$")
_TEST_DEVICES = re.compile(r"_(xpu|npu|privateuse1)(?=_|$)")


@dataclass(frozen=True)
class Wanted:
    """A record's test as this device instantiates it."""

    file: str
    test_class: str  # "" for any class
    name: str
    substring: bool

    def matches(self, node_id: str) -> bool:
        file, _, rest = node_id.partition("::")
        if file != self.file:
            return False
        test_class, _, test = rest.partition("::")
        if self.test_class and test_class != self.test_class:
            return False
        return self.name in test if self.substring else test == self.name


@dataclass(frozen=True)
class Record:
    line: int
    backend: str
    confidence: str
    file: str
    test_class: str
    name: str
    substring: bool
    torch_from: str = ""  # the upgrade the record is about: "2.13" -> "2.14"
    torch_to: str = ""

    def for_device(self, device_class: str, device_test: str) -> Wanted:
        """Renamed for the device (`TestCommonXPU` -> `TestCommonSPYRE`, `_xpu` -> `_spyre`)."""
        return Wanted(
            self.file,
            _CLASS_DEVICES.sub(device_class, self.test_class),
            _TEST_DEVICES.sub(f"_{device_test}", self.name),
            self.substring,
        )


def read_records(path: Path) -> list[Record]:
    found = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            raw = json.loads(text)
            found.append(
                Record(
                    number,
                    raw["backend"],
                    raw.get("confidence", ""),
                    raw["test_file"],
                    raw.get("test_class") or "",
                    raw["test_name"],
                    bool(raw.get("pattern_is_regex_or_substring")),
                    str(raw.get("torch_from", "")),
                    str(raw.get("torch_to", "")),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}:{number}: not a failure record ({exc})") from exc
    return found


def _minor(version: str) -> str:
    """`2.13.0` -> `2.13`: records name releases by their minor version."""
    return ".".join(version.split(".")[:2])


def for_upgrade(records: list[Record], from_: str, to: str) -> tuple[list[Record], str]:
    """The records about the upgrade `from_` -> `to` (by minor version; a record naming none
    counts for any), and a one-line note on those left out ("" for none)."""
    wanted = (_minor(from_), _minor(to))
    kept: list[Record] = []
    other: list[Record] = []
    for record in records:
        about = (_minor(record.torch_from), _minor(record.torch_to))
        unnamed = not record.torch_from and not record.torch_to
        (kept if unnamed or about == wanted else other).append(record)
    if not other:
        return kept, ""
    upgrades = sorted({f"{r.torch_from} -> {r.torch_to}" for r in other})
    lines = ", ".join(str(r.line) for r in other[:5]) + (", ..." if len(other) > 5 else "")
    note = (
        f"records about another upgrade than {from_} -> {to} left out: {len(other)} "
        f"({'; '.join(upgrades)}; lines {lines})"
    )
    return kept, note


def _select(args: argparse.Namespace, deps: str) -> Any:
    from selection.pipeline import SelectOptions, prepare, run_pipeline

    options = SelectOptions(from_=args.from_, to=args.to, cache=args.cache_dir, deps=deps)
    request, _ = prepare(options)
    return run_pipeline(request)


def _judge(
    records: Iterable[Record], reused: list[str], selected: set[str], device: str
) -> list[dict[str, Any]]:
    """Per record: how many reused instances it names, and how many of those are selected."""
    device_class, device_test = device.upper(), device
    rows = []
    for record in records:
        wanted = record.for_device(device_class, device_test)
        hits = [n for n in reused if wanted.matches(n)]
        rows.append(
            {
                "line": record.line,
                "backend": record.backend,
                "confidence": record.confidence,
                "test": f"{record.file}::{record.test_class}::{record.name}",
                "reused": len(hits),
                "selected": sum(1 for n in hits if n in selected),
            }
        )
    return rows


def random_catch(rows: list[dict[str, Any]], selected: int, reused: int) -> float:
    """How many of the records in scope a random selection of `selected` of the `reused`
    instances would select in full, expected: a record naming k instances is, with
    probability (selected/reused)**k about (exactly, drawing without replacement, the
    product of (selected - i) / (reused - i) for i < k)."""
    expected = 0.0
    for row in rows:
        chance = 1.0
        for i in range(row["reused"]):
            chance *= max(selected - i, 0) / (reused - i)
        expected += chance
    return expected


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, default=RECORDS)
    parser.add_argument("--from", dest="from_", default="2.13")
    parser.add_argument("--to", default="2.14")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "spyre-ci")
    parser.add_argument("--modes", type=lambda s: s.split(","), default=["map", "static"])
    args = parser.parse_args(argv)
    records, left_out = for_upgrade(read_records(args.records), args.from_, args.to)
    if not records:
        raise SystemExit(f"{args.records}: {left_out}; none is about {args.from_} -> {args.to}")
    print(f"python bench/bench_failure_records.py --from {args.from_} --to {args.to}: "
          f"{len(records)} records from {args.records.name}")  # fmt: skip
    if left_out:
        print(left_out)
    for mode in args.modes:
        cpu = time.process_time()
        state = _select(args, "auto" if mode == "map" else "none")
        reused = [i.node_id for i in state.reused]
        selected = set(state.candidates)
        rows = _judge(records, reused, selected, state.request.device.name)
        in_scope = [r for r in rows if r["reused"]]
        caught = [r for r in in_scope if r["selected"] == r["reused"]]
        partly = [r for r in in_scope if 0 < r["selected"] < r["reused"]]
        print(f"\n{mode}: selected {len(selected)} of {len(reused)} reused "
              f"({time.process_time() - cpu:.0f} s CPU)")  # fmt: skip
        print(
            "| backend | confidence | records | in the reused scope | all selected | partly | none |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- |")
        keys = sorted({(r["backend"], r["confidence"]) for r in rows})
        for backend, confidence in keys:
            mine = [r for r in rows if (r["backend"], r["confidence"]) == (backend, confidence)]
            scope = [r for r in mine if r["reused"]]
            full = sum(1 for r in scope if r["selected"] == r["reused"])
            some = sum(1 for r in scope if 0 < r["selected"] < r["reused"])
            print(f"| {backend} | {confidence} | {len(mine)} | {len(scope)} | {full} | {some} | "
                  f"{len(scope) - full - some} |")  # fmt: skip
        chance = random_catch(in_scope, len(selected), len(reused))
        print(f"in scope: {len(in_scope)}, every instance selected: {len(caught)}, "
              f"partly: {len(partly)} (a random selection of the same size would select "
              f"every instance of {chance:.1f} of them, expected: a record of k instances "
              f"with probability about {len(selected) / max(len(reused), 1):.1%}**k)")  # fmt: skip
        for row in in_scope:
            print(f"  {row['test']}: {row['selected']}/{row['reused']} selected "
                  f"({row['backend']}, {row['confidence']}, line {row['line']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
