"""A tiny x86-64 ELF shared object, written byte by byte: functions whose bodies are direct
calls (`E8 rel32`) of each other or of PLT stubs, with the sections selection.sources.elf
reads (.text, .plt, .rela.plt, .dynsym, .dynstr, .symtab, .strtab, .shstrtab). Section i's
header is at `section_header(data, i)`; tests mutate the bytes to make them malformed."""

from __future__ import annotations

import struct

HEADER = 64
SECTION_HEADER = 64
SYMBOL = 24
RELA = 24
PLT_ENTRY = 16
SECTIONS = (
    "",
    ".text",
    ".plt",
    ".rela.plt",
    ".dynsym",
    ".dynstr",
    ".symtab",
    ".strtab",
    ".shstrtab",
)
TEXT_ADDR = 0x1000
PLT_ADDR = 0x800


def _strings(names: list[bytes]) -> tuple[bytes, list[int]]:
    blob, offsets = b"\0", []
    for name in names:
        offsets.append(len(blob))
        blob += name + b"\0"
    return blob, offsets


def _symbols(offsets: list[int], values: list[int], sizes: list[int], kind: int) -> bytes:
    out = bytes(SYMBOL)  # symbol 0: undefined
    for name, value, size in zip(offsets, values, sizes, strict=True):
        out += struct.pack("<IBBHQQ", name, 0x10 | kind, 0, 1 if value else 0, value, size)
    return out


def tiny_elf(functions: dict[bytes, list[bytes]], imports: list[bytes]) -> bytes:
    """`functions`: mangled name -> the names it calls, in order (a function or an import)."""
    names = list(functions)
    sizes = [5 * len(calls) + 1 for calls in functions.values()]
    starts = [TEXT_ADDR + sum(sizes[:i]) for i in range(len(names))]
    where = dict(zip(names, starts, strict=True))
    where.update({name: PLT_ADDR + PLT_ENTRY * (i + 1) for i, name in enumerate(imports)})
    text = b""
    for start, calls in zip(starts, functions.values(), strict=True):
        for i, callee in enumerate(calls):
            source = start + 5 * i
            text += b"\xe8" + struct.pack("<i", where[callee] - (source + 5))
        text += b"\xc3"
    plt = bytes(PLT_ENTRY * (len(imports) + 1))
    dynstr, dyn_offsets = _strings(imports)
    dynsym = _symbols(dyn_offsets, [0] * len(imports), [0] * len(imports), 2)
    rela = b"".join(struct.pack("<QQq", 0, ((i + 1) << 32) | 7, 0) for i in range(len(imports)))
    strtab, offsets = _strings(names)
    symtab = _symbols(offsets, starts, sizes, 2)
    shstrtab, section_names = _strings([s.encode() for s in SECTIONS[1:]])
    # (data, address, link) per section after the null one; .text and .plt at their addresses
    bodies = [
        (text, TEXT_ADDR, 0),
        (plt, PLT_ADDR, 0),
        (rela, 0, 4),
        (dynsym, 0, 5),
        (dynstr, 0, 0),
        (symtab, 0, 7),
        (strtab, 0, 0),
        (shstrtab, 0, 0),
    ]
    data = bytearray(max(TEXT_ADDR + len(text), PLT_ADDR + len(plt)))
    data[TEXT_ADDR : TEXT_ADDR + len(text)] = text
    data[PLT_ADDR : PLT_ADDR + len(plt)] = plt
    headers = bytes(SECTION_HEADER)
    for (body, address, link), name in zip(bodies, section_names, strict=True):
        if address:
            offset = address
        else:
            offset = len(data)
            data += body
        headers += struct.pack("<IIQQQQIIQQ", name, 1, 0, address, offset, len(body), link, 0, 1, 0)
    shoff = len(data)
    data += headers
    data[:HEADER] = _header(shoff, len(SECTIONS), len(SECTIONS) - 1)
    return bytes(data)


def _header(shoff: int, count: int, names: int) -> bytes:
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    return ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 0x3E, 1, 0, 0, shoff, 0, HEADER, 0, 0, SECTION_HEADER, count, names
    )


def section_header(data: bytes, index: int) -> int:
    """Where section `index`'s header is in `data`."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    return int(shoff) + index * SECTION_HEADER


def patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)
