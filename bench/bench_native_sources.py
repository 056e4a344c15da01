"""Measure: could an older release's C++ source stand in for a wheel's, for argument counts?

A changed schema default (native_functions.yaml) reaches only the C++ callers that omit the
argument. A clone's source says what each call passes (selection.cpp.source_calls); a
release's library does not (a compiled call holds every argument), so in release mode every
`native-call` edge into the op counts as omitting. The only C++ source on these machines is
Debian's PyTorch 2.6.0. This compares, per op whose composite or meta kernel calls other ops,
the ops its kernels call as read from that source with the ops they call in the release's
library: where the two sets differ, the kernel changed since (or the source reader misses
calls the library holds), and the source's argument counts could not be trusted for it.

Usage: python bench/bench_native_sources.py [--pytorch-src DIR] [--release 2.13.0]
           [--op slice] [--cache-dir DIR]
(--pytorch-src defaults to $SPYRE_CI_PYTORCH_SRC, else the tree `make test` fetches with
scripts/fetch-pytorch-src.sh.)
"""

from __future__ import annotations

import argparse
import os
import time
import zipfile
from pathlib import Path

from selection.cpp.corpus import CppCorpus
from selection.cpp.native_index import build_formula_index, build_native_index
from selection.cpp.source_calls import SourceCode
from selection.links.native_calls import NativeCalls, native_call_uses
from selection.sources.native_binary import Unreadable, join, library_calls_of
from selection.sources.tree import DirTree
from selection.sources.wheels import cached_wheel

CACHE = Path.home() / ".cache" / "spyre-ci"
NATIVE = "aten/src/ATen/native/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
PACKAGED = "torchgen/packaged/ATen/native/native_functions.yaml"
PACKAGED_DERIVATIVES = "torchgen/packaged/autograd/derivatives.yaml"


def source_calls(src: Path) -> NativeCalls:
    native = build_native_index((src / NATIVE).read_text(), NATIVE)
    formulas = build_formula_index((src / DERIVATIVES).read_text(), DERIVATIVES)
    code = SourceCode(CppCorpus(DirTree(src)), set(native.overloads), f"{src.name} source")
    return native_call_uses(code, native, formulas, native.overloads)


def library_calls(release: str, cache: Path) -> NativeCalls:
    wheel = cached_wheel(release, cache)
    if wheel is None:
        raise SystemExit(f"no cached wheel of torch {release} in {cache}: run `make run` first")
    library = library_calls_of(wheel, cache, None)
    if isinstance(library, Unreadable):
        raise SystemExit(f"{wheel.name}: {library.reason}")
    with zipfile.ZipFile(wheel) as archive:
        native = archive.read(PACKAGED).decode()
        derivatives = archive.read(PACKAGED_DERIVATIVES).decode()
    return join(library, release, (PACKAGED, native), (PACKAGED_DERIVATIVES, derivatives))


def called(calls: NativeCalls) -> dict[str, set[str]]:
    return {user: {op for op, _ in found} for user, found in calls.kernels.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    fetched = os.environ.get("SPYRE_CI_PYTORCH_SRC") or str(
        CACHE / "pytorch-src" / "pytorch-v2.6.0"
    )
    parser.add_argument("--pytorch-src", type=Path, default=Path(fetched))
    parser.add_argument("--release", default="2.13.0")
    parser.add_argument("--op", default="slice", help="the op whose callers are listed")
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    args = parser.parse_args()
    if not (args.pytorch_src / NATIVE).is_file():
        raise SystemExit(
            f"--pytorch-src {args.pytorch_src}: no {NATIVE} (bash scripts/fetch-pytorch-src.sh)"
        )
    started = time.process_time()
    old, new = source_calls(args.pytorch_src), library_calls(args.release, args.cache_dir)
    print(f"read in {time.process_time() - started:.1f} s CPU")
    print(old.describe())
    print(new.describe())
    source, library = called(old), called(new)
    same = {user for user in library if source.get(user) == library[user]}
    print(
        f"ops whose kernels call others: {len(library)} in the library, {len(source)} in the "
        f"source; the same ops called: {len(same)} ({len(same) / len(library):.0%})"
    )
    edges = {(user, op) for user, ops in library.items() for op in ops}
    shared = edges & {(user, op) for user, ops in source.items() for op in ops}
    print(
        f"edges (calling op, called op) in the library: {len(edges)}, in the source too: {len(shared)}"
    )
    callers = sorted(user for user, ops in library.items() if args.op in ops)
    trusted = [user for user in callers if user in same]
    print(
        f"{args.op}: {len(callers)} ops' kernels call it in the library; the source calls the "
        f"same ops for {len(trusted)} of them ({', '.join(trusted) or 'none'})"
    )


if __name__ == "__main__":
    main()
