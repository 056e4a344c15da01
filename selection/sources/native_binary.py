"""The C++ calls between ATen ops of a release, read from its cached wheel's
`torch/lib/libtorch_cpu.so` (selection.links.native_calls says what they are for).

The library (430 MB) is extracted next to the cache, read (selection.sources.elf: a few seconds
of CPU) and deleted. What its functions call (selection.cpp.binary_calls.LibraryCalls, under
1 MB) depends on the library alone: it is kept in the analysis cache under the wheel's name
and size and the code that reads it, and joined with the head's native_functions.yaml and
derivatives.yaml on every run, so neither a warm run nor a `--diff` editing the yaml reads
the library again. A library that cannot be read -- not an x86-64 ELF (its first 64 bytes are
checked before the rest is extracted), malformed, a wheel member that does not inflate -- is
remembered so too, with its reason.

A compiled call holds every argument, so the library cannot say whether a call omitted one
(what a changed schema default matters for): each (calling op, called op) edge is given, as
an older count, the fewest arguments PyTorch 2.6.0's source passed in the same edge, where
recorded (selection.cpp.recorded_arguments): a changed default past it is a doubt.

Anything unreadable -- no cached wheel, such a library, a yaml that does not parse, numpy (of
the `backend` extra, imported only here to read a library) not installed -- gives no calls
and a one-line reason, never an error: the links are a refinement of the static graph, not
a source of truth.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from selection.cpp.binary_calls import BinaryCode, LibraryCalls, library_calls
from selection.cpp.native_index import (
    DERIVATIVES_PATHS,
    NATIVE_FUNCTIONS_PATHS,
    FormulaIndex,
    build_formula_index,
    build_native_index,
)
from selection.cpp.recorded_arguments import RECORD_FILE, load_recorded_arguments, with_recorded
from selection.links.native_calls import (
    BINARY_DECIDERS,
    LIBRARY,
    NOTE_PREFIX,
    NativeCalls,
    native_call_uses,
)
from selection.native_yaml import NativeYamlError
from selection.sources.analysis_cache import AnalysisCache, modules_digest
from selection.sources.elf_file import HEADER_SIZE, ElfError, check_header
from selection.sources.tree import SourceTree
from selection.sources.wheels import cached_wheel

# The modules whose code decides what a library's functions call (the cached LibraryCalls:
# the library's readers and what they import) or why it could not be read (Unreadable).
LIBRARY_DECIDERS = (*BINARY_DECIDERS, "selection.sources.native_binary")


@dataclass(frozen=True)
class Unreadable:
    reason: str  # one line: why this wheel's library gives no calls


def _first(tree: SourceTree, paths: tuple[str, ...]) -> tuple[str, str] | None:
    for path in paths:
        text = tree.read(path)
        if text is not None:
            return path, text
    return None


def release_native_calls(
    version: str, cache_root: Path, head: SourceTree, analysis: AnalysisCache | None
) -> tuple[NativeCalls | None, str]:
    """The calls, and a note saying what was read or why nothing was."""
    wheel = cached_wheel(version, cache_root)
    if wheel is None:
        return None, f"{NOTE_PREFIX}: no cached wheel of torch {version}"
    native, formulas = _first(head, NATIVE_FUNCTIONS_PATHS), _first(head, DERIVATIVES_PATHS)
    if native is None:
        return None, f"{NOTE_PREFIX}: the head has no native_functions.yaml"
    library = library_calls_of(wheel, cache_root, analysis)
    if isinstance(library, Unreadable):
        return None, f"{NOTE_PREFIX} not read from {wheel.name}: {library.reason}"
    try:
        calls = join(library, f"{LIBRARY} of torch {version}", native, formulas)
    except NativeYamlError as exc:
        return None, f"{NOTE_PREFIX} not read from {wheel.name}: {exc}"
    recorded = load_recorded_arguments()
    if recorded is None:
        return calls, f"{calls.describe()}; no recorded argument counts ({RECORD_FILE.name})"
    calls, found = with_recorded(calls, recorded)
    return calls, (
        f"{calls.describe()}; {found} of these edges carry the fewest arguments their calls "
        f"passed in {recorded.source} (a changed default they passed there is a doubt: a canary "
        "runs the tests nearest the caller)"
    )


def join(
    library: LibraryCalls,
    source: str,
    native: tuple[str, str],
    formulas: tuple[str, str] | None,
) -> NativeCalls:
    """The edges: what the library's functions call, for the kernels and formula helpers the
    yaml files (path, text) name. Raises NativeYamlError."""
    native_index = build_native_index(native[1], native[0])
    formula_index = build_formula_index(formulas[1], formulas[0]) if formulas else FormulaIndex()
    code = BinaryCode(library, native_index.overloads, source, LIBRARY)
    return native_call_uses(code, native_index, formula_index, native_index.overloads)


def library_calls_of(
    wheel: Path, cache_root: Path, analysis: AnalysisCache | None
) -> LibraryCalls | Unreadable:
    """What the wheel's library calls, or why it cannot be read: from the analysis cache when
    this wheel was read before by this code."""
    key = AnalysisCache.key(
        "native-calls-library",
        modules_digest(LIBRARY_DECIDERS),
        wheel.name,
        str(wheel.stat().st_size),
    )
    cached = analysis.get(key) if analysis is not None else None
    if isinstance(cached, LibraryCalls | Unreadable):
        return cached
    try:
        found: LibraryCalls | Unreadable = read_library(wheel, cache_root)
    except ElfError as exc:
        found = Unreadable(str(exc))
    except KeyError:
        found = Unreadable(f"no {LIBRARY} in the wheel")
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        found = Unreadable(f"{LIBRARY} is damaged in the wheel ({exc})")
    except ImportError as exc:  # numpy, of the `backend` extra: not remembered
        return Unreadable(f"reading it needs numpy ({exc})")
    except OSError as exc:  # a full disk, a permission: not the wheel's fault, not remembered
        return Unreadable(str(exc))
    if analysis is not None:
        analysis.put(key, found)
    return found


def read_library(wheel: Path, cache_root: Path) -> LibraryCalls:
    """Extract the wheel's library next to the cache and read what its functions call.
    Raises ElfError, KeyError (no library), zipfile/zlib errors, ImportError, OSError."""
    label = f"{wheel.name}:{LIBRARY}"
    with zipfile.ZipFile(wheel) as archive, archive.open(LIBRARY) as member:
        check_header(member.read(HEADER_SIZE), label)  # before extracting 430 MB
    from selection.sources.elf import read_call_graph  # numpy: only to read a library

    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_root, prefix="libtorch-") as scratch:
        library = Path(scratch) / "libtorch_cpu.so"
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(LIBRARY) as member,
            library.open("wb") as out,
        ):
            shutil.copyfileobj(member, out, 1 << 20)
        graph = read_call_graph(library, label)
    return library_calls(graph)
