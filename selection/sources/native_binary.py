"""The C++ calls between ATen ops of a release, read from its cached wheel's
`torch/lib/libtorch_cpu.so` (selection.links.native_calls says what they are for).

The library (430 MB) is extracted next to the cache, read (selection.sources.elf: a few seconds
of CPU) and deleted; the result is small and kept in the analysis cache under the wheel's
name and size and the content of the head's native_functions.yaml and derivatives.yaml, so
a warm run reads nothing. Anything unreadable -- no cached wheel, a library that is not the
expected ELF or a wheel member that does not inflate, a yaml that does not parse, numpy (of
the `backend` extra, imported only here to read a library) not installed -- gives no calls
and a one-line reason, never an error: the links are a refinement of the static graph, not
a source of truth.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path

from selection.cpp.binary_calls import BinaryCode
from selection.cpp.native_index import (
    DERIVATIVES_PATHS,
    NATIVE_FUNCTIONS_PATHS,
    FormulaIndex,
    build_formula_index,
    build_native_index,
)
from selection.links.native_calls import (
    DECIDERS,
    LIBRARY,
    NOTE_PREFIX,
    NativeCalls,
    native_call_uses,
)
from selection.native_yaml import NativeYamlError
from selection.sources.analysis_cache import AnalysisCache, modules_digest
from selection.sources.elf_file import ElfError
from selection.sources.tree import SourceTree
from selection.sources.wheels import cached_wheel


def _first(tree: SourceTree, paths: tuple[str, ...]) -> tuple[str, str, str] | None:
    for path in paths:
        text = tree.read(path)
        if text is not None:
            return path, text, tree.content_id(path) or ""
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
    ids = (native[2], formulas[2] if formulas else "")
    size, code = str(wheel.stat().st_size), modules_digest(DECIDERS)
    key = AnalysisCache.key("native-calls", code, wheel.name, size, *ids)
    cached = analysis.get(key) if analysis is not None else None
    if isinstance(cached, NativeCalls):
        return cached, cached.describe()
    try:
        calls = _read(wheel, version, native, formulas, cache_root)
    except (ElfError, NativeYamlError, zipfile.BadZipFile, KeyError, OSError) as exc:
        return None, f"{NOTE_PREFIX} not read from {wheel.name}: {exc}"
    except (zlib.error, EOFError) as exc:
        return None, f"{NOTE_PREFIX} not read from {wheel.name}: {LIBRARY} is damaged ({exc})"
    except ImportError as exc:  # numpy, of the `backend` extra
        return None, f"{NOTE_PREFIX} not read from {wheel.name}: reading it needs numpy ({exc})"
    if analysis is not None:
        analysis.put(key, calls)
    return calls, calls.describe()


def _read(
    wheel: Path,
    version: str,
    native: tuple[str, str, str],
    formulas: tuple[str, str, str] | None,
    cache_root: Path,
) -> NativeCalls:
    from selection.sources.elf import read_call_graph  # numpy: only to read a library

    source = f"{LIBRARY} of torch {version}"
    native_index = build_native_index(native[1], native[0])
    formula_index = build_formula_index(formulas[1], formulas[0]) if formulas else None
    cache_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_root, prefix="libtorch-") as scratch:
        library = Path(scratch) / "libtorch_cpu.so"
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(LIBRARY) as member,
            library.open("wb") as out,
        ):
            shutil.copyfileobj(member, out, 1 << 20)
        graph = read_call_graph(library, f"{wheel.name}:{LIBRARY}")
    code = BinaryCode(graph, native_index.overloads, source, LIBRARY)
    return native_call_uses(
        code, native_index, formula_index or FormulaIndex(), native_index.overloads
    )
