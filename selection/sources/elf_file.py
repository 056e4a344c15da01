"""The structure of an x86-64 ELF shared object: its header, section table and string tables,
each checked (struct only, no numpy: the header is checked before a wheel's 430 MB library
is extracted, and this runs where numpy is not installed). selection.sources.elf reads the
calls with it.

Anything that is not a well-formed little-endian x86-64 ELF file -- a bad magic, a section
table that does not fit the file, a name offset past its string table, a table whose size
is no multiple of its entries' -- raises ElfError, one line naming the file.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

HEADER_SIZE = 64  # ELF64 file header
_SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")  # ELF64 section header: 64 bytes
_X86_64 = 0x3E


class ElfError(Exception):
    """Not a little-endian x86-64 ELF shared object with a symbol table and a PLT."""


class Section:
    def __init__(self, fields: tuple[int, ...]) -> None:
        (self.name, self.type, _, self.addr, self.offset, self.size, self.link, _, _, _) = fields


def check_header(header: bytes, label: str) -> tuple[int, int, int]:
    """The section table's (offset, entry count, index of the section names) of a 64-bit
    little-endian x86-64 ELF file's first HEADER_SIZE bytes; ElfError otherwise."""
    if len(header) < HEADER_SIZE or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        raise ElfError(f"{label}: not a 64-bit little-endian ELF file")
    if struct.unpack_from("<H", header, 0x12)[0] != _X86_64:
        raise ElfError(f"{label}: not an x86-64 binary")
    shoff = struct.unpack_from("<Q", header, 0x28)[0]
    entsize, count, names = struct.unpack_from("<HHH", header, 0x3A)
    if entsize != _SECTION_HEADER.size:
        raise ElfError(f"{label}: section headers of {entsize} bytes, not {_SECTION_HEADER.size}")
    if count == 0:
        raise ElfError(f"{label}: no section headers")
    if names >= count:
        raise ElfError(f"{label}: section names in section {names} of {count}")
    return shoff, count, names


def c_string(blob: bytes, offset: int, label: str) -> bytes:
    """The NUL-terminated string at `offset` of a string table."""
    end = blob.find(b"\0", offset) if 0 <= offset < len(blob) else -1
    if end < 0:
        raise ElfError(f"{label}: a name at offset {offset} of a {len(blob)}-byte string table")
    return blob[offset:end]


class ElfFile:
    """The sections of an open ELF file, by name and by index."""

    def __init__(self, handle: BinaryIO, label: str) -> None:
        self.handle, self.label = handle, label
        handle.seek(0, 2)
        self.file_size = handle.tell()
        handle.seek(0)
        shoff, count, names = check_header(handle.read(HEADER_SIZE), label)
        table = self.read(shoff, count * _SECTION_HEADER.size)
        self.by_index = [
            Section(_SECTION_HEADER.unpack_from(table, i * _SECTION_HEADER.size))
            for i in range(count)
        ]
        strings = self.strings(self.by_index[names])
        self.sections = {
            c_string(strings, s.name, label).decode(errors="replace"): s for s in self.by_index
        }

    def read(self, offset: int, size: int) -> bytes:
        if offset + size > self.file_size:
            raise ElfError(f"{self.label}: truncated (wanted {size} bytes at {offset})")
        self.handle.seek(offset)
        data = self.handle.read(size)
        if len(data) != size:
            raise ElfError(f"{self.label}: truncated (wanted {size} bytes at {offset})")
        return data

    def section(self, name: str) -> Section:
        found = self.sections.get(name)
        if found is None:
            raise ElfError(f"{self.label}: no {name} section")
        return found

    def linked(self, section: Section) -> Section:
        """The section `section` names as its link (a symbol table's string table)."""
        if not 0 < section.link < len(self.by_index):
            raise ElfError(f"{self.label}: a link to section {section.link}")
        return self.by_index[section.link]

    def strings(self, section: Section) -> bytes:
        return self.read(section.offset, section.size)

    def table(self, section: Section, entry: int, name: str) -> bytes:
        """A table section's bytes, checked to hold whole entries of `entry` bytes."""
        if section.size % entry:
            raise ElfError(
                f"{self.label}: {name} of {section.size} bytes, not {entry}-byte entries"
            )
        return self.read(section.offset, section.size)

    def check_within(self, section: Section, name: str) -> None:
        if section.offset + section.size > self.file_size:
            raise ElfError(f"{self.label}: {name} runs past the end of the file")
