"""Read the direct calls of an x86-64 ELF shared object (`torch/lib/libtorch_cpu.so` of a
release wheel) into a `CallGraph`. The I/O shell of selection.cpp.binary_calls.

A wheel holds no C++ source, but its library keeps a full symbol table: every function's
mangled name, address and size. A call between functions of the library is a `call rel32`
(E8) or a tail `jmp rel32` (E9) whose target is the start of a function, or of a PLT stub
(calls of exported functions, `at::_ops::gather::call`, go through the PLT; `.rela.plt`
names the symbol of each stub). The text is scanned for those opcodes in chunks (numpy, a
few seconds for 280 MB); a byte that only looks like an opcode would have to land exactly
on one of the ~400,000 function starts to count, which the 4 GB of rel32 values makes rare,
and an extra edge only widens. Indirect calls (virtual, function pointers, dispatch stubs)
are not seen: selection.links.native_calls says what that leaves out.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from selection.cpp.binary_calls import CallGraph

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


class ElfError(Exception):
    """Not a little-endian x86-64 ELF shared object with a symbol table and a PLT."""


class _Section:
    def __init__(self, fields: tuple[int, ...]) -> None:
        (self.name, self.type, _, self.addr, self.offset, self.size, self.link, _, _, _) = fields


class _Elf:
    def __init__(self, handle: BinaryIO, label: str) -> None:
        self.handle, self.label = handle, label
        handle.seek(0)
        header = handle.read(64)
        if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
            raise ElfError(f"{label}: not a 64-bit little-endian ELF file")
        if struct.unpack_from("<H", header, 0x12)[0] != 0x3E:
            raise ElfError(f"{label}: not an x86-64 binary")
        shoff = struct.unpack_from("<Q", header, 0x28)[0]
        entsize, count, names = struct.unpack_from("<HHH", header, 0x3A)
        table = self._read(shoff, entsize * count)
        sections = [
            _Section(struct.unpack_from("<IIQQQQIIQQ", table, i * entsize)) for i in range(count)
        ]
        strings = self._read(sections[names].offset, sections[names].size)
        self.sections = {_c_string(strings, s.name).decode(): s for s in sections}
        self.by_index = sections

    def _read(self, offset: int, size: int) -> bytes:
        self.handle.seek(offset)
        data = self.handle.read(size)
        if len(data) != size:
            raise ElfError(f"{self.label}: truncated (wanted {size} bytes at {offset})")
        return data

    def section(self, name: str) -> _Section:
        found = self.sections.get(name)
        if found is None:
            raise ElfError(f"{self.label}: no {name} section")
        return found

    def array(self, section: _Section, dtype: np.dtype) -> npt.NDArray:
        return np.frombuffer(self._read(section.offset, section.size), dtype=dtype)

    def strings(self, section: _Section) -> bytes:
        return self._read(section.offset, section.size)


def _c_string(blob: bytes, offset: int) -> bytes:
    return blob[offset : blob.index(b"\0", offset)]


def read_call_graph(path: Path, label: str = "") -> CallGraph:
    """The functions of `path` and their direct calls. Raises ElfError (one line, naming the
    file) on anything else; OSError propagates."""
    label = label or str(path)
    with path.open("rb") as handle:
        elf = _Elf(handle, label)
        symtab = elf.section(".symtab")
        symbols = elf.array(symtab, _SYMBOL)
        names_blob = elf.strings(elf.by_index[symtab.link])
        functions = symbols[((symbols["info"] & 0xF) == _FUNC) & (symbols["size"] > 0)]
        functions = functions[np.argsort(functions["value"], kind="stable")]
        starts = functions["value"].astype(np.int64)
        sizes = functions["size"].astype(np.int64)
        names = [_c_string(names_blob, int(n)) for n in functions["name"]]
        imports = _plt_imports(elf)
        plt = elf.section(".plt")
        text = elf.section(".text")
        callers, callees = _scan(handle, text, starts, sizes, plt.addr, len(imports), len(names))
    return CallGraph.from_edges(label, names + imports, callers, callees, len(names))


def _plt_imports(elf: _Elf) -> list[bytes]:
    """The symbol each PLT stub jumps to, in stub order (stub 0 is the resolver's)."""
    relocations = elf.array(elf.section(".rela.plt"), _RELA)
    dynsym = elf.section(".dynsym")
    symbols = elf.array(dynsym, _SYMBOL)
    blob = elf.strings(elf.by_index[dynsym.link])
    return [_c_string(blob, int(symbols["name"][int(info >> 32)])) for info in relocations["info"]]


def _scan(
    handle: BinaryIO,
    text: _Section,
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
