"""Text edits at source positions, applied to a file's text, and the patch they make. Pure.

Positions are 1-based lines and 0-based *character* columns. `ast` gives UTF-8 byte
columns; `span` converts them, so a mutation after a non-ASCII character lands where it
should.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True)
class Edit:
    line: int
    col: int
    end_line: int
    end_col: int
    text: str  # replaces [line:col, end_line:end_col)


class OverlappingEdits(ValueError):
    """Two edits of one mutation touch the same characters."""


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def span(node: ast.AST, lines: Sequence[str]) -> tuple[int, int, int, int]:
    """(line, col, end_line, end_col) of a node, in characters."""
    line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    col = _char_col(lines[line - 1], node.col_offset)  # type: ignore[attr-defined]
    end_col = _char_col(lines[end_line - 1], node.end_col_offset or 0)  # type: ignore[attr-defined]
    return line, col, end_line, end_col


def replace_node(node: ast.AST, lines: Sequence[str], text: str) -> Edit:
    return Edit(*span(node, lines), text)


def segment(lines: Sequence[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The text between two (line, col) positions."""
    (line, col), (end_line, end_col) = start, end
    if line == end_line:
        return lines[line - 1][col:end_col]
    parts = [lines[line - 1][col:], *lines[line : end_line - 1], lines[end_line - 1][:end_col]]
    return "\n".join(parts)


def lines_of(text: str) -> list[str]:
    """The lines as Python numbers them: split at newlines only (`str.splitlines` also
    splits at form feeds and other separators, which would shift every line after them)."""
    return text.split("\n")


def _offsets(text: str) -> list[int]:
    starts, total = [0], 0
    for line in lines_of(text):
        total += len(line) + 1
        starts.append(total)
    return starts


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """The text with every edit applied (edits must not overlap)."""
    starts = _offsets(text)

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    ranges = sorted(
        ((offset(e.line, e.col), offset(e.end_line, e.end_col), e.text) for e in edits),
        reverse=True,
    )
    for (start, _end, _), (_s, previous_end, _t) in pairwise(ranges):
        if previous_end > start:
            raise OverlappingEdits(f"edits overlap at offset {start}")
    for start, end, replacement in ranges:
        text = text[:start] + replacement + text[end:]
    return text


def _with_ends(text: str) -> list[str]:
    return [line for line in re.split(r"(?<=\n)", text) if line]


def unified_patch(path: str, old: str, new: str, context: int = 3) -> str:
    """A git-style patch turning `old` into `new` at `path` (what `git apply` takes)."""
    old_lines, new_lines = _with_ends(old), _with_ends(new)
    body = []
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}", n=context):
        body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    if not body:
        return ""
    return f"diff --git a/{path} b/{path}\n" + "".join(body)
