"""Benchmark the C++ reader and the cpp link kind on a real PyTorch source tree.

The tree: --src DIR, else $SPYRE_CI_PYTORCH_SRC, else $PYTORCH_ROOT (e.g. Debian's `pytorch`
source package 2.6.0: `apt-get source pytorch` with a trixie deb-src line). Without one it says
so and exits 0. Prints, with CPU seconds (time.process_time, this process):
1. the reader over every C++ file of aten/src/ATen/native: files, definitions by kind,
   functions, files it could not read, files read through the first-#if-branch fallback;
2. kernel coverage: the kernel names native_functions.yaml gives our dispatch keys, and how
   many of them the reader finds defined in the tree;
3. reach: a fixed sample of changed definitions (every k-th function of native/ and
   native/cpu/) linked to ATen ops: how many reach an op, ops per change, CPU per change,
   and all of them as the changes of one revision;
4. range mode: one kernel edited between two commits of a git repository holding the tree's
   native/, YAML and FunctionsManual; Detector and CppLinks through GitTree, CPU seconds.

Usage: python bench/bench_cpp.py [--src DIR] [--sample 300]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import git
from rich.progress import Progress

from selection.cpp.corpus import CppCorpus
from selection.cpp.items import CppFile
from selection.cpp.native_index import (
    DERIVATIVES_PATHS,
    NATIVE_FUNCTIONS_PATHS,
    build_formula_index,
    build_native_index,
)
from selection.cpp.reach import reach_ops
from selection.cpp.reader import read_cpp
from selection.cpp.scan import match_brackets
from selection.cpp.tokens import CppSyntaxError, tokenize
from selection.detect import Detector
from selection.device import DeviceFacts
from selection.links.cpp import CppLinks
from selection.links.index import LinkIndex
from selection.model import Revision
from selection.oplists import OpDatabase
from selection.sources.tree import DirTree, GitTree, changed_paths
from selection.universe import Universe
from selection.upstream import ParsedTrees

CPP_SUFFIXES = (".cpp", ".cc", ".h", ".hpp", ".cu", ".cuh", ".mm")
DEFINING = ("function", "impl", "meta")


def source_root(given: str | None) -> Path | None:
    for candidate in (
        given,
        os.environ.get("SPYRE_CI_PYTORCH_SRC"),
        os.environ.get("PYTORCH_ROOT"),
    ):
        if candidate and (Path(candidate) / "aten/src/ATen/native").is_dir():
            return Path(candidate)
    return None


def needed_fallback(text: str) -> bool:
    tokens = tokenize(text)
    try:
        match_brackets(tokens.texts, tokens.line)
    except CppSyntaxError:
        return True
    return False


def read_all(root: Path) -> dict[str, CppFile]:
    paths = sorted(
        p for p in (root / "aten/src/ATen/native").rglob("*") if p.suffix in CPP_SUFFIXES
    )
    files: dict[str, CppFile] = {}
    with Progress(transient=True) as progress:
        task = progress.add_task("reading C++", total=len(paths))
        for path in paths:
            rel = str(path.relative_to(root))
            files[rel] = read_cpp(path.read_text(encoding="utf-8", errors="replace"), rel)
            progress.advance(task)
    return files


def report_reader(root: Path) -> dict[str, CppFile]:
    start = time.process_time()
    files = read_all(root)
    seconds = time.process_time() - start
    kinds = Counter(item.kind for f in files.values() for item in f.items.values())
    unreadable = [(p, f.error) for p, f in files.items() if f.error]
    fallback = [p for p in files if needed_fallback((root / p).read_text(errors="replace"))]
    size = sum((root / p).stat().st_size for p in files) / 1e6
    print(f"1. reader: {len(files)} files ({size:.1f} MB) under aten/src/ATen/native")
    print(
        f"   definitions: {sum(kinds.values())} ({', '.join(f'{k} {n}' for k, n in kinds.most_common())})"
    )
    print(
        f"   functions (function + TORCH_IMPL_FUNC + TORCH_META_FUNC): {sum(kinds[k] for k in DEFINING)}"
    )
    print(f"   unreadable files: {len(unreadable)} {unreadable[:5]}")
    print(f"   read through the first-#if-branch fallback: {len(fallback)} {fallback}")
    print(f"   CPU: {seconds:.2f} s ({seconds / max(1, len(files)) * 1000:.1f} ms per file)")
    return files


def report_coverage(root: Path, files: dict[str, CppFile]) -> None:
    tree = DirTree(root)
    path = next(p for p in NATIVE_FUNCTIONS_PATHS if tree.read(p) is not None)
    native = build_native_index(tree.read(path) or "", path)
    wanted = {k for k, uses in native.kernels.items() if not all(u.assumed for u in uses)}
    defined = {
        name
        for f in files.values()
        for item in f.items.values()
        for name in (item.name, *item.defines)
    }
    found = wanted & defined
    missing = sorted(wanted - defined)
    print(f"2. kernels named for our keys in {path}: {len(wanted)}; defined in native/: "
          f"{len(found)} ({len(found) / len(wanted):.1%}); not found, e.g. {missing[:8]}")  # fmt: skip


def report_reach(root: Path, sample_size: int) -> None:
    tree = DirTree(root)
    native_path = next(p for p in NATIVE_FUNCTIONS_PATHS if tree.read(p) is not None)
    derivatives_path = next(p for p in DERIVATIVES_PATHS if tree.read(p) is not None)
    native = build_native_index(tree.read(native_path) or "", native_path)
    formulas = build_formula_index(tree.read(derivatives_path) or "", derivatives_path)
    corpus = CppCorpus(tree)
    start = time.process_time()
    corpus.mentioning(set())  # the identifier index, built once per revision
    candidates = [
        (p, item)
        for p in corpus.paths()
        if p.count("/") in (4, 5) and p.startswith("aten/src/ATen/native/")
        and (p.count("/") == 4 or p.startswith("aten/src/ATen/native/cpu/"))
        for item in corpus.file(p).items.values()
        if item.kind in DEFINING
    ]  # fmt: skip
    setup = time.process_time() - start
    step = max(1, len(candidates) // sample_size)
    sample = candidates[::step][:sample_size]
    counts: list[int] = []
    truncated = other_only = 0
    start = time.process_time()
    with Progress(transient=True) as progress:
        task = progress.add_task("reaching ops", total=len(sample))
        for path, item in sample:
            reached = reach_ops([(path, item)], corpus, native, formulas)
            counts.append(len(reached.ops))
            truncated += reached.truncated
            theirs = reached.visited == 1 and corpus.other_device_mentions(set(item.lookup_names))
            other_only += not reached.ops and bool(reached.other_keys or theirs)
            progress.advance(task)
    seconds = time.process_time() - start
    linked = sorted(c for c in counts if c)
    print(f"3. reach: {len(sample)} changed definitions (every {step}th of {len(candidates)} in "
          f"native/ and native/cpu/); setup (identifier index, parsing on demand) {setup:.2f} s CPU")  # fmt: skip
    print(f"   reach an op: {len(linked)} ({len(linked) / len(sample):.1%}); only other devices' "
          f"or layouts' kernels or code: {other_only}; none (blind spot, canary): "
          f"{len(sample) - len(linked) - other_only}; "
          f"truncated (> visit cap, canary): {truncated}")  # fmt: skip
    if linked:
        p90 = linked[int(0.9 * (len(linked) - 1))]
        print(
            f"   ops per linked change: median {statistics.median(linked):.0f}, p90 {p90}, max {linked[-1]}"
        )
    print(f"   CPU: {seconds:.2f} s in all, {seconds / len(sample) * 1000:.0f} ms per change")
    start = time.process_time()
    links = sum(len(reach_ops([c], corpus, native, formulas).ops) for c in candidates)
    seconds = time.process_time() - start
    print(f"   all {len(candidates)} as changes of one revision (a release range's scale): "
          f"{seconds:.1f} s CPU, {links} links")  # fmt: skip


RANGE_FILES = ("aten/src/ATen/native", "tools/autograd/derivatives.yaml",
               "torch/csrc/autograd/FunctionsManual.cpp", "torch/csrc/autograd/FunctionsManual.h")  # fmt: skip
RANGE_EDIT = (
    "aten/src/ATen/native/cpu/BinaryOpsKernel.cpp",
    "void mul_kernel(TensorIteratorBase& iter) {",
    "void mul_kernel(TensorIteratorBase& iter) {\n  TORCH_INTERNAL_ASSERT(iter.ntensors() == 3);",
)


def report_range(root: Path) -> None:
    """Range mode as a clone gives it: two commits of a git repository (the native tree, the
    YAML and FunctionsManual copied from the source tree), one kernel edited; Detector +
    CppLinks through GitTree, as `select --pytorch-repo` reads them."""
    with tempfile.TemporaryDirectory() as tmp:
        repo_dir = Path(tmp) / "pytorch"
        for rel in RANGE_FILES:
            source, target = root / rel, repo_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
        repo = git.Repo.init(repo_dir)
        with repo.config_writer() as config:
            config.set_value("user", "name", "bench")
            config.set_value("user", "email", "bench@example.invalid")
        repo.git.add("--all")
        base = repo.index.commit("base").hexsha
        path, old, new = RANGE_EDIT
        edited = repo_dir / path
        edited.write_text(edited.read_text().replace(old, new, 1))
        repo.git.add("--all")
        head = repo.index.commit("edit").hexsha
        start = time.process_time()
        base_trees = ParsedTrees(GitTree(repo, base))
        head_trees = ParsedTrees(GitTree(repo, head))
        changes = Detector(base_trees, head_trees).detect(
            Revision("base", base), Revision("head", head), changed_paths(repo, base, head)
        )
        detected = time.process_time() - start
        index = LinkIndex(head_trees, base_trees, OpDatabase(), Universe(), DeviceFacts())
        results = [CppLinks().explain(change, index) for change in changes.cpp]
        linked = time.process_time() - start - detected
    ops = sorted({link.target.name for r in results for link in r.links})
    print(
        f"4. range mode (git, GitTree): edit {path}: {[c.function for c in changes.cpp]} -> {ops}"
    )
    print(f"   CPU: detect {detected:.2f} s, link (first change of the revision: YAML and identifier "
          f"index built) {linked:.2f} s")  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src")
    parser.add_argument("--sample", type=int, default=300)
    args = parser.parse_args(argv)
    root = source_root(args.src)
    if root is None:
        print(
            "bench_cpp: no PyTorch source tree (pass --src DIR or set SPYRE_CI_PYTORCH_SRC); nothing measured"
        )
        return 0
    print(f"source tree: {root}")
    files = report_reader(root)
    report_coverage(root, files)
    report_reach(root, args.sample)
    report_range(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
