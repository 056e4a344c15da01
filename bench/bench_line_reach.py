"""Estimate: how much would per-line coverage narrow a release selection?

The recorded map (`spyre-ci deps record`) says which (op, dtype) pairs ran each function. A
changed function reaches every pair that ran it, even when the edit sits in a branch those
pairs never take (`_check_with`'s change runs only when a check fails). This experiment
measures, on a sample of recorded pairs, how many of the pairs that ran a changed function
also ran the changed statements, and projects that onto the selection `spyre-ci select`
wrote: a selected test of a sampled pair loses a cause whose changed statements its pair did
not run; the test leaves the selection when no cause is left.

Lines come from coverage.py (contexts per pair) around the recorder's own `record_pair`
(memos cleared as in a recording); only the calling thread is traced, so lines that ran on
the autograd engine's device thread (backward) are missed: the projection is an estimate of
what a per-line map would give, not a selection. A changed line inside the function's
decorators or signature, or an insertion at the start of its body, counts as the whole
function (that code runs for every call, or at definition time).

Usage: python bench/bench_line_reach.py --selection out/selection-2.13-2.14/selection.json
           --base torch-2.13.0 --head torch-2.14.1 [--pairs 200] [--top 12]
"""

from __future__ import annotations

import argparse
import ast
import collections
import copy
import difflib
import json
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

CACHE = Path.home() / ".cache" / "spyre-ci"
Span = tuple[int, int]
Pair = tuple[str, str, str]
Lines = dict[str, dict[int, set[str]]]  # file -> line -> labels of the pairs that ran it


def function_node(tree: ast.Module, qualname: str) -> ast.AST | None:
    """The function or class node named by a dotted qualname (no `<locals>`)."""
    scope: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in qualname.split("."):
        found = [
            n
            for n in scope
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.name == part
        ]
        if not found:
            return None
        node = found[-1]  # the runtime definition (overload stubs come first)
        scope = node.body
    return node


def statement_spans(function: ast.AST) -> list[Span]:
    """The line spans that run as one step: a simple statement whole, a compound
    statement's header (its test, iterable, items or handler type)."""
    spans: list[Span] = []
    for node in ast.walk(function):
        if node is function or not isinstance(node, ast.stmt):
            continue
        blocks = [getattr(node, f, None) for f in ("body", "orelse", "finalbody", "handlers")]
        first_child = [b[0].lineno for b in blocks if isinstance(b, list) and b]
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = (min(first_child) - 1) if first_child else (node.end_lineno or node.lineno)
        spans.append((start, max(start, end)))
    for node in ast.walk(function):
        if isinstance(node, ast.ExceptHandler):
            spans.append((node.lineno, max(node.lineno, node.body[0].lineno - 1)))
    return spans


def changed_spans(old_src: str, new_src: str, qualname: str) -> list[Span] | None:
    """The statement spans of the old function that the edit touches; None when the edit
    reaches every call (signature, decorators, start of the body) or cannot be placed."""
    old_fn = function_node(ast.parse(old_src), qualname)
    new_fn = function_node(ast.parse(new_src), qualname)
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    if not isinstance(old_fn, functions) or not isinstance(new_fn, functions):
        return None
    old_lines, new_lines = old_src.splitlines(), new_src.splitlines()
    o0 = min([old_fn.lineno, *(d.lineno for d in old_fn.decorator_list)])
    n0 = min([new_fn.lineno, *(d.lineno for d in new_fn.decorator_list)])
    old_body = old_lines[o0 - 1 : old_fn.end_lineno]
    new_body = new_lines[n0 - 1 : new_fn.end_lineno]
    body_start = old_fn.body[0].lineno
    if isinstance(old_fn.body[0], ast.Expr) and isinstance(old_fn.body[0].value, ast.Constant):
        body_start = old_fn.body[1].lineno if len(old_fn.body) > 1 else body_start
    spans = statement_spans(old_fn)
    touched: set[Span] = set()
    matcher = difflib.SequenceMatcher(None, old_body, new_body, autojunk=False)
    same_signature = _signature(old_fn) == _signature(new_fn)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        lines = range(o0 + i1, o0 + i2) if tag != "insert" else (o0 + i1 - 1, o0 + i1)
        for line in lines:
            if line < body_start and same_signature and tag != "insert":
                continue  # annotations or the docstring: nothing a call runs
            if line < body_start and (tag != "insert" or line < body_start - 1):
                return None  # signature, decorators, docstring edge: every call
            hit = [s for s in spans if s[0] <= line <= s[1]]
            if hit:
                touched.add(min(hit, key=lambda s: s[1] - s[0]))  # innermost
            elif tag == "insert":
                return None
    return sorted(touched)


def _signature(function: ast.AST) -> str:
    """The decorators and parameters (names, kinds, defaults) without annotations."""
    shell = copy.deepcopy(function)
    for node in ast.walk(shell.args):  # type: ignore[attr-defined]
        if isinstance(node, ast.arg):
            node.annotation = None
    shell.returns = None  # type: ignore[attr-defined]
    shell.body = []  # type: ignore[attr-defined]
    return ast.dump(shell, include_attributes=False)


def parse_cause(summary: str) -> tuple[str, str] | None:
    """`torch/__init__.py: _check_with modified` -> (path, qualname)."""
    if ": " not in summary or not summary.endswith(" modified"):
        return None
    path, rest = summary.split(": ", 1)
    qualname = rest.removesuffix(" modified")
    if not path.endswith(".py") or " " in qualname:
        return None
    return path, qualname


def git_show(mirror: Path, ref: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror), "show", f"{ref}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def recorded_pairs(map_file: Path) -> list[Pair]:
    with sqlite3.connect(f"file:{map_file}?mode=ro", uri=True) as db:
        query = "SELECT database, op, dtype FROM pairs WHERE status = 'ok'"
        return [(d, o, t) for d, o, t in db.execute(query)]


def run_sample(
    pairs: list[Pair], files: list[str], torch_dir: Path
) -> dict[str, dict[int, set[str]]]:
    """file -> line -> the labels of the sampled pairs that ran it (coverage contexts)."""
    import coverage

    from spyre_ci.deps.execute import Entries, open_device
    from spyre_ci.deps.paths import RunSettings
    from spyre_ci.deps.symbols import SymbolResolver
    from spyre_ci.deps.worker import record_pair

    device = open_device("torch_spyre_ref")
    settings = RunSettings(device=device)
    entries, resolver = Entries(), SymbolResolver(torch_dir.parent)
    record_pair(entries, pairs[0], settings, resolver)  # warm-up: lazy imports
    targets = [str(torch_dir.parent / f) for f in files]
    cov = coverage.Coverage(data_file=None, include=targets, branch=False)
    started = time.process_time()
    for index, pair in enumerate(pairs):
        cov.start()
        cov.switch_context("/".join(pair))
        record_pair(entries, pair, settings, resolver)
        cov.stop()
        if index % 25 == 0:
            print(f"  {index}/{len(pairs)} pairs, {time.process_time() - started:.0f} s CPU")
    data = cov.get_data()
    out: dict[str, dict[int, set[str]]] = {}
    for rel, full in zip(files, targets, strict=True):
        by_line = data.contexts_by_lineno(full) if full in data.measured_files() else {}
        out[rel] = {line: {c for c in ctxs if c} for line, ctxs in by_line.items()}
    return out


Analysed = dict[str, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, list[Span] | None]]


def analyse(
    counts: collections.Counter[str], mirror: Path, base: str, head: str, top: int
) -> Analysed:
    """The `top` most frequent changed functions: (path, the base's definition, changed
    spans or None for the whole function), by cause summary."""
    sources: dict[tuple[str, str], str] = {}

    def show(ref: str, path: str) -> str:
        if (ref, path) not in sources:
            sources[ref, path] = git_show(mirror, ref, path)
        return sources[ref, path]

    analysed: Analysed = {}
    for summary, _n in counts.most_common():
        if len(analysed) >= top:
            break
        parsed = parse_cause(summary)
        if parsed is None:
            continue
        path, qualname = parsed
        try:
            old, new = show(base, path), show(head, path)
            node = function_node(ast.parse(old), qualname)
        except (subprocess.CalledProcessError, SyntaxError):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            analysed[summary] = (path, node, changed_spans(old, new, qualname))
    return analysed


def coverage_lines(args: argparse.Namespace, sample: list[Pair], files: list[str]) -> Lines:
    """The sample's lines, read from `--lines` when it exists (else run, and written)."""
    if args.lines and args.lines.exists():
        raw = json.loads(args.lines.read_text())
        return {f: {int(k): set(v) for k, v in by.items()} for f, by in raw.items()}
    import torch

    lines = run_sample(sample, files, Path(torch.__file__).parent)
    if args.lines:
        raw = {f: {k: sorted(v) for k, v in by.items()} for f, by in lines.items()}
        args.lines.write_text(json.dumps(raw))
    return lines


def narrowed(analysed: Analysed, lines: Lines, labels: set[str]) -> dict[str, set[str]]:
    """Per change coverage saw run: the sampled pairs that ran its changed statements."""

    def ran(path: str, spans: list[Span]) -> set[str]:
        found: set[str] = set()
        for line, who in lines[path].items():
            if any(a <= line <= b for a, b in spans):
                found |= who
        return found & labels

    hits: dict[str, set[str]] = {}
    print("change | pairs that ran the function | ... the changed statements | spans")
    for summary, (path, node, spans) in analysed.items():
        in_function = ran(path, [(node.lineno, node.end_lineno or node.lineno)])
        if in_function:  # else coverage did not see it run (a memo's footprint): left as is
            hits[summary] = in_function if spans is None else ran(path, spans)
        seen = len(hits[summary]) if summary in hits else "not seen"
        shown = spans if spans is not None else "whole function"
        print(f"{summary} | {len(in_function)} | {seen} | {shown}")
    return hits


def project(
    doc: dict[str, Any], hits: dict[str, set[str]], recorded: set[Pair], labels: set[str]
) -> None:
    """Selected tests of sampled pairs that keep a cause once `hits` narrow theirs."""
    kept = total = 0
    for test in doc["selected"]:
        causes = {c["summary"] for c in test["causes"] if c["stage"] == "detect"}
        op, dtype = test.get("op"), test.get("dtype")
        pair = next(
            (p for p in (("opinfo", op, dtype), ("moduleinfo", op, dtype)) if p in recorded), None
        )
        label = "/".join(pair) if pair is not None else ""
        if label not in labels:
            continue
        total += 1
        kept += any(c not in hits or label in hits[c] for c in causes)
    share = kept / total if total else 0.0
    print(
        f"selected tests of sampled pairs: {total}; still selected with per-line reach: {kept} ({share:.1%})"
    )
    print(
        f"projected onto the {len(doc['selected'])} selected: about {round(share * len(doc['selected']))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--selection", type=Path, required=True)
    parser.add_argument("--base", default="torch-2.13.0")
    parser.add_argument("--head", default="torch-2.14.1")
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument(
        "--lines", type=Path, help="coverage lines: read if it exists, else written"
    )
    args = parser.parse_args()

    from importlib.metadata import version

    from selection.sources.deps_store import find_map

    map_file = find_map(args.cache_dir, version("torch"), "spyre")
    if map_file is None:
        raise SystemExit(f"no recorded map in {args.cache_dir}: run `spyre-ci deps record` first")
    doc: dict[str, Any] = json.loads(args.selection.read_text())
    counts = collections.Counter(
        c["summary"] for s in doc["selected"] for c in s["causes"] if c["stage"] == "detect"
    )
    analysed = analyse(counts, args.cache_dir / "mirror", args.base, args.head, args.top)
    recorded = recorded_pairs(map_file)
    sample = recorded[:: max(1, len(recorded) // args.pairs)][: args.pairs]
    files = sorted({path for path, _, _ in analysed.values()})
    print(
        f"{len(sample)} of {len(recorded)} recorded pairs, {len(analysed)} changed functions in {len(files)} files"
    )
    labels = {"/".join(p) for p in sample}
    hits = narrowed(analysed, coverage_lines(args, sample, files), labels)
    project(doc, hits, set(recorded), labels)


if __name__ == "__main__":
    main()
