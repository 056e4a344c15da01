"""C++ source as tokens: comments and layout dropped, each preprocessor directive one token.

Pure. Enough of the lexical grammar for comparing and structuring ATen-style sources:
identifiers, numbers (with `'` separators), string and character literals (prefixed and raw
`R"d(...)d"`), punctuators (`>` is never merged into `>>`, so template argument lists close
one bracket at a time) and directives (`#define ...` with its continuation lines, comments
removed, whitespace collapsed). An unterminated comment or literal is a `CppSyntaxError`
naming the line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass


class CppSyntaxError(ValueError):
    """The text is not C++ this reader can structure; the message names the line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r\f\v]+|\\\n)
  | (?P<newline>\n)
  | (?P<comment>//[^\n]*|/\*(?:.*?\*/|.*))
  | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\()
  | (?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")
  | (?P<char>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*')
  | (?P<number>\.?\d(?:[eEpP][+-]|'(?=\w)|[\w.])*)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<punct>::|->\*?|\.\.\.|<=>|<<=|>>=|[-+*/%&|^!=<]=|&&|\|\||\+\+|--|<<|\#\#|[^\s])
    """,
    re.VERBOSE | re.DOTALL,
)
_DIRECTIVE_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_SPACES = re.compile(r"\s+")


@dataclass
class Tokens:
    """Token texts with their start offsets in the source (for line numbers)."""

    texts: list[str]
    offsets: list[int]
    newlines: list[int]  # offsets of every '\n', for `line()`

    def line(self, index: int) -> int:
        if not self.texts:
            return 1
        offset = self.offsets[min(index, len(self.offsets) - 1)]
        return bisect_right(self.newlines, offset - 1) + 1 if offset else 1


def is_directive(token: str) -> bool:
    return token.startswith("#") and token != "##"


def _directive_end(text: str, start: int) -> int:
    """End of the directive starting at `start` (a `#`): the first newline that is neither
    escaped nor inside a block comment."""
    pos, size = start, len(text)
    while pos < size:
        char = text[pos]
        if char == "\n":
            return pos
        if char == "\\" and pos + 1 < size and text[pos + 1] == "\n":
            pos += 2
            continue
        if text.startswith("/*", pos):
            close = text.find("*/", pos + 2)
            pos = size if close < 0 else close + 2
            continue
        if text.startswith("//", pos):
            close = text.find("\n", pos)
            return size if close < 0 else close
        pos += 1
    return size


def normalize_directive(raw: str) -> str:
    body = _DIRECTIVE_COMMENT.sub(" ", raw.replace("\\\n", " "))
    return _SPACES.sub(" ", body).strip().replace("# ", "#", 1)


def tokenize(text: str, directives: bool = True) -> Tokens:
    """`directives=False` reads a macro body, where `#` is the stringizing operator."""
    texts: list[str] = []
    offsets: list[int] = []
    newlines = [m.start() for m in re.finditer("\n", text)]
    pos, size, line_start = 0, len(text), True
    match = _TOKEN.match
    while pos < size:
        found = match(text, pos)
        if found is None:  # pragma: no cover - the punct branch matches any character
            raise CppSyntaxError(bisect_right(newlines, pos - 1) + 1, "unreadable character")
        kind = found.lastgroup
        if kind == "space":
            pos = found.end()
            continue
        if kind == "newline":
            pos, line_start = found.end(), True
            continue
        if kind == "comment":
            if text.startswith("/*", pos) and not found.group().endswith("*/"):
                raise CppSyntaxError(bisect_right(newlines, pos - 1) + 1, "unterminated comment")
            pos = found.end()
            continue
        if kind == "punct" and found.group() == "#" and line_start and directives:
            end = _directive_end(text, pos)
            texts.append(normalize_directive(text[pos:end]))
            offsets.append(pos)
            pos = end
            continue
        line_start = False
        if kind == "raw":
            closing = ")" + found.group("delim") + '"'
            end = text.find(closing, found.end())
            if end < 0:
                raise CppSyntaxError(bisect_right(newlines, pos - 1) + 1, "unterminated raw string")
            texts.append(text[pos : end + len(closing)])
            offsets.append(pos)
            pos = end + len(closing)
            continue
        token = found.group()
        if token in ('"', "'"):
            raise CppSyntaxError(bisect_right(newlines, pos - 1) + 1, "unterminated literal")
        texts.append(token)
        offsets.append(pos)
        pos = found.end()
    return Tokens(texts, offsets, newlines)
