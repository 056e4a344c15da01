"""How many arguments C++ calls between ops pass, recorded from an older release's source.

A changed schema default (native_functions.yaml) reaches only the C++ callers that omit the
argument. A clone's source says what each call passes (selection.cpp.source_calls); a
release's library does not: its compiled call holds every argument, the defaults filled in.
So in release mode every `native-call` edge into the op counted as omitting, and a default
of an op that composite kernels call everywhere (`slice`'s `dim`: `narrow`, `select`,
`chunk`, ... and through them most ops) reached nearly every test.

The only C++ source on these machines is Debian's PyTorch 2.6.0. Its kernels moved since
(`bench/bench_native_sources.py`: of the 2,664 edges the 2.13.0 library holds, 1,770 are in
2.6.0's source), so its counts do not decide: an edge whose calls all passed the argument in
2.6.0's source is a doubt (`Step.older_arguments`), not followed by the walk, and a canary
runs the tests nearest the caller (selection.links.resolve, selection.mapping). An edge the older
source does not hold, or holds with a call of unknown count, is followed as before.

The record (`selection/data/native_call_arguments.json`): per op whose composite or meta
kernel (`kernels`) or backward formula's C++ helper (`formulas`) calls another op, the
fewest arguments its calls pass, receiver counted, where known. Pure apart from
`load_recorded_arguments` (reads the packaged file) and `main` (the generator:
`python -m selection.cpp.recorded_arguments --pytorch-src DIR > selection/data/
native_call_arguments.json`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from selection.links.native_calls import Calls, NativeCalls

RECORD_FILE = Path(__file__).parent.parent / "data" / "native_call_arguments.json"
SCHEMA = "spyre-ci/native-call-arguments"

Counts = dict[str, dict[str, int]]  # calling op (base) -> called op (base) -> fewest passed


@dataclass(frozen=True)
class RecordedArguments:
    source: str = ""  # what they were read from, for the evidence and the run's notes
    kernels: Counts = field(default_factory=dict)
    formulas: Counts = field(default_factory=dict)


def record(calls: NativeCalls, source: str) -> RecordedArguments:
    """The known counts of a source's edges (NativeCalls read by SourceCode)."""
    return RecordedArguments(source, _known(calls.kernels), _known(calls.formulas))


def _known(table: Calls) -> Counts:
    counts: Counts = {}
    for user, called in table.items():
        known = {op: step.arguments for op, step in called if step.arguments is not None}
        if known:
            counts[user] = known
    return counts


def with_recorded(calls: NativeCalls, recorded: RecordedArguments) -> tuple[NativeCalls, int]:
    """A library's edges, each whose count is unknown given the recorded count of the same
    (calling op, called op) edge, when there is one; and how many were."""
    kernels, found = _annotated(calls.kernels, recorded.kernels)
    formulas, more = _annotated(calls.formulas, recorded.formulas)
    annotated = replace(calls, kernels=kernels, formulas=formulas, arguments_from=recorded.source)
    return annotated, found + more


def _annotated(table: Calls, counts: Counts) -> tuple[Calls, int]:
    out: Calls = {}
    found = 0
    for user, called in table.items():
        known = counts.get(user, {})
        edges = []
        for op, step in called:
            older = known.get(op) if step.arguments is None else None
            if older is not None:
                step = replace(step, older_arguments=older)
                found += 1
            edges.append((op, step))
        out[user] = tuple(edges)
    return out, found


def dumps(recorded: RecordedArguments) -> str:
    document = {
        "schema": SCHEMA,
        "schema_version": 1,
        "source": recorded.source,
        "kernels": recorded.kernels,
        "formulas": recorded.formulas,
    }
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def parse(document: dict[str, Any]) -> RecordedArguments:
    """Raises ValueError on a document that is not a record of this schema."""
    if document.get("schema") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} document")
    tables = [document.get(name) for name in ("kernels", "formulas")]
    for table in tables:
        if not isinstance(table, dict) or not all(
            isinstance(called, dict) and all(_is_count(n) for n in called.values())
            for called in table.values()
        ):
            raise ValueError("kernels and formulas map ops to {op: argument count}")
    return RecordedArguments(str(document.get("source", "")), tables[0], tables[1])  # type: ignore[arg-type]


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@cache
def load_recorded_arguments(path: Path = RECORD_FILE) -> RecordedArguments | None:
    """The packaged record, or None when it is missing or damaged (every edge then counts as
    omitting, as without it)."""
    try:
        return parse(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    """Record the argument counts of a PyTorch source tree's C++ calls between ops."""
    import argparse

    from selection.cpp.corpus import CppCorpus
    from selection.cpp.native_index import (
        DERIVATIVES_PATHS,
        NATIVE_FUNCTIONS_PATHS,
        build_formula_index,
        build_native_index,
    )
    from selection.cpp.source_calls import SourceCode
    from selection.links.native_calls import native_call_uses
    from selection.native_yaml import NativeYamlError
    from selection.sources.tree import DirTree

    parser = argparse.ArgumentParser(
        prog="python -m selection.cpp.recorded_arguments", description=main.__doc__
    )
    parser.add_argument("--pytorch-src", type=Path, required=True)
    parser.add_argument("--label", help="where the tree came from (default: its version.txt)")
    args = parser.parse_args(argv)
    tree = DirTree(args.pytorch_src)
    native_path, formulas_path = NATIVE_FUNCTIONS_PATHS[0], DERIVATIVES_PATHS[0]
    native, formulas = tree.read(native_path), tree.read(formulas_path)
    if native is None or formulas is None:
        print(f"{args.pytorch_src}: no {native_path} or {formulas_path}", file=sys.stderr)
        return 1
    try:
        native_index = build_native_index(native, native_path)
        formula_index = build_formula_index(formulas, formulas_path)
    except NativeYamlError as exc:
        print(f"{args.pytorch_src}: {exc}", file=sys.stderr)
        return 1
    ops = native_index.overloads
    version = (tree.read("version.txt") or "?").strip()
    label = args.label or f"PyTorch {version}'s C++ source"
    code = SourceCode(CppCorpus(tree), set(ops), label)
    calls = native_call_uses(code, native_index, formula_index, ops)
    sys.stdout.write(dumps(record(calls, label)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
