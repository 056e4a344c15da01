"""Read the direct calls of an x86-64 ELF shared object (`torch/lib/libtorch_cpu.so` of a
release wheel) into a `CallGraph`. The I/O shell of selection.cpp.binary_calls; the file's
structure is read and checked by selection.sources.elf_file.

A wheel holds no C++ source, but its library keeps a full symbol table: every function's
mangled name, address and size. A call between functions of the library is a `call rel32`
(E8) or a tail `jmp rel32` (E9) whose target is the start of a function, or of a PLT stub
(calls of exported functions, `at::_ops::gather::call`, go through the PLT; `.rela.plt`
names the symbol of each stub). The text is scanned for those opcodes in chunks (numpy, a
few seconds for 280 MB); a byte that only looks like an opcode would have to land exactly
on one of the ~400,000 function starts to count, which the 4 GB of rel32 values makes rare,
and an extra edge only widens. Indirect calls (virtual, function pointers, dispatch stubs)
are not seen: selection.links.native_calls says what that leaves out.

This module needs numpy (the `backend` extra); import it only to read a library.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from selection.cpp.binary_calls import CallGraph
from selection.sources.elf_file import ElfError, ElfFile, Section, c_string

__all__ = ["ElfError", "read_call_graph"]

_CHUNK = 32 << 20  # bytes of text scanned at once: bounds memory
_SYMBOL = np.dtype(
    [
        ("name", "<u4"),
        ("info", "u1"),
        ("other", "u1"),
        ("shndx", "<u2"),
        ("value", "<u8"),
        ("size", "<u8"),
    ]
)
_RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])
_FUNC = 2  # STT_FUNC
_PLT_ENTRY = 16


def _array(elf: ElfFile, section: Section, dtype: np.dtype, name: str) -> npt.NDArray:
    return np.frombuffer(elf.table(section, dtype.itemsize, name), dtype=dtype)


def read_call_graph(path: Path, label: str = "") -> CallGraph:
    """The functions of `path` and their direct calls. Raises ElfError (one line, naming the
    file) on anything else; OSError propagates."""
    label = label or str(path)
    with path.open("rb") as handle:
        elf = ElfFile(handle, label)
        symtab = elf.section(".symtab")
        symbols = _array(elf, symtab, _SYMBOL, ".symtab")
        names_blob = elf.strings(elf.linked(symtab))
        functions = symbols[((symbols["info"] & 0xF) == _FUNC) & (symbols["size"] > 0)]
        if not len(functions):
            raise ElfError(f"{label}: no functions in .symtab")
        functions = functions[np.argsort(functions["value"], kind="stable")]
        starts = functions["value"].astype(np.int64)
        sizes = functions["size"].astype(np.int64)
        names = [c_string(names_blob, int(n), label) for n in functions["name"]]
        imports = _plt_imports(elf)
        plt = elf.section(".plt")
        text = elf.section(".text")
        elf.check_within(text, ".text")
        callers, callees = _scan(handle, text, starts, sizes, plt.addr, len(imports), len(names))
    return CallGraph.from_edges(label, names + imports, callers, callees, len(names))


def _plt_imports(elf: ElfFile) -> list[bytes]:
    """The symbol each PLT stub jumps to, in stub order (stub 0 is the resolver's)."""
    relocations = _array(elf, elf.section(".rela.plt"), _RELA, ".rela.plt")
    dynsym = elf.section(".dynsym")
    symbols = _array(elf, dynsym, _SYMBOL, ".dynsym")
    blob = elf.strings(elf.linked(dynsym))
    found = []
    for info in relocations["info"].tolist():
        index = info >> 32
        if index >= len(symbols):
            raise ElfError(f"{elf.label}: .rela.plt names symbol {index} of {len(symbols)}")
        found.append(c_string(blob, int(symbols["name"][index]), elf.label))
    return found


def _scan(
    handle: BinaryIO,
    text: Section,
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    plt_addr: int,
    stubs: int,
    functions: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(caller, callee) ids of every direct call or tail jump in the text: callee ids below
    `functions` are functions, from `functions` on PLT stubs (in import order)."""
    found_callers, found_callees = [], []
    for begin in range(0, text.size, _CHUNK):
        handle.seek(text.offset + begin)
        data = np.frombuffer(handle.read(min(_CHUNK + 4, text.size - begin)), dtype=np.uint8)
        if len(data) < 5:
            break
        head = data[:-4]
        at = np.nonzero((head == 0xE8) | (head == 0xE9))[0]
        at = at[at < _CHUNK]
        rel = (
            data[at + 1].astype(np.int64)
            | (data[at + 2].astype(np.int64) << 8)
            | (data[at + 3].astype(np.int64) << 16)
            | (data[at + 4].astype(np.int64) << 24)
        )
        rel = np.where(rel >= 1 << 31, rel - (1 << 32), rel)
        source = text.addr + begin + at
        target = source + 5 + rel
        k = np.minimum(np.searchsorted(starts, target), len(starts) - 1)
        is_function = starts[k] == target
        stub = (target - plt_addr) // _PLT_ENTRY - 1
        is_stub = ((target - plt_addr) % _PLT_ENTRY == 0) & (stub >= 0) & (stub < stubs)
        keep = is_function | is_stub
        source, k, stub, is_function = source[keep], k[keep], stub[keep], is_function[keep]
        caller = np.searchsorted(starts, source, side="right") - 1
        inside = (caller >= 0) & (source < starts[caller] + sizes[caller])
        callee = np.where(is_function, k, functions + stub)
        found_callers.append(caller[inside])
        found_callees.append(callee[inside])
    if not found_callers:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(found_callers), np.concatenate(found_callees)
