"""Executed code objects as `selection.observed` names them: `torch/<path>::<qualname>`.

Pure apart from reading the source files it is given (no torch). A code object is known by
(file, first line, co_qualname). The qualname is that of the symbol of
`selection.pyast.module_symbols` that defines it, or of a function nested in one:
`Tensor.__rsub__` stays itself, `outer.<locals>.inner` stays itself (an edit confined to
`inner` then reaches only the pairs that ran it), a lambda or comprehension is the function
that defines it (`outer.<locals>.<lambda>` is `outer`), and anything else is the symbol whose
lines contain it (`<lambda>` at module level assigned to `x` is `x`; inside an `if` block it
is `<module>`).
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from selection.observed import NESTED
from selection.pyast import MODULE_SYMBOL, module_symbols

CodeKey = tuple[str, int, str]  # (absolute file name, co_firstlineno, co_qualname)


@dataclass
class _FileSymbols:
    names: set[str]
    starts: list[int]  # sorted first lines (decorators included) of the symbols' statements
    spans: list[tuple[int, int, str]]  # (first, last, qualname), same order as starts


def _span(node: ast.AST) -> tuple[int, int]:
    first = getattr(node, "lineno", 1)
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        first = min(first, decorators[0].lineno)
    return first, getattr(node, "end_lineno", first) or first


def _file_symbols(text: str, filename: str) -> _FileSymbols:
    tree = ast.parse(text, filename=filename)
    symbols = module_symbols(tree, text)
    spans: list[tuple[int, int, str]] = []
    for name, symbol in symbols.items():
        if name == MODULE_SYMBOL:
            continue
        if symbol.kind == "class":
            # The class header: methods are their own symbols, other body statements belong
            # to the class (a lambda in a class attribute is the class).
            spans.append((*_span_of_class(tree, name), name))
            continue
        for node in symbol.nodes:
            spans.append((*_span(node), name))
    spans.sort()
    return _FileSymbols(set(symbols), [s[0] for s in spans], spans)


def _span_of_class(tree: ast.Module, name: str) -> tuple[int, int]:
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return _span(stmt)
    return 0, -1


@dataclass
class SymbolResolver:
    """Maps code objects under `root/torch` to `torch/<path>::<qualname>`; files parsed once."""

    root: Path  # the directory holding the `torch` package (site-packages, or a scratch copy)
    _files: dict[str, _FileSymbols | None] = field(default_factory=dict)
    _resolved: dict[CodeKey, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._prefix = str(self.root / "torch") + "/"

    def resolve(self, key: CodeKey) -> str | None:
        """The observed name of a code object, or None when it is not under torch/."""
        if key not in self._resolved:
            self._resolved[key] = self._resolve(key)
        return self._resolved[key]

    def _resolve(self, key: CodeKey) -> str | None:
        filename, firstlineno, qualname = key
        if not filename.startswith(self._prefix) or not filename.endswith(".py"):
            return None
        path = "torch/" + filename[len(self._prefix) :]
        symbols = self._symbols(filename)
        if symbols is None:
            return f"{path}::{MODULE_SYMBOL}"
        return f"{path}::{_top_level(symbols, firstlineno, qualname)}"

    def _symbols(self, filename: str) -> _FileSymbols | None:
        if filename not in self._files:
            try:
                text = Path(filename).read_text(encoding="utf-8")
                self._files[filename] = _file_symbols(text, filename)
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
                self._files[filename] = None
        return self._files[filename]


def _top_level(symbols: _FileSymbols, firstlineno: int, qualname: str) -> str:
    named = _innermost_named(qualname)
    outer = named.split(NESTED, 1)[0]
    if "<" not in outer and outer in symbols.names:
        return named
    # A lambda, a comprehension, a nested class's method, a function defined in an `if`:
    # the innermost top-level symbol whose lines contain the code's first line.
    # Spans only nest as a class around its methods, so the containing span that starts
    # last is the innermost one.
    index = bisect_right(symbols.starts, firstlineno) - 1
    while index >= 0:
        first, last, name = symbols.spans[index]
        if first <= firstlineno <= last:
            return name
        index -= 1
    return MODULE_SYMBOL


def _innermost_named(qualname: str) -> str:
    """The qualname without trailing lambdas and comprehensions (`f.<locals>.g.<locals>.
    <lambda>` -> `f.<locals>.g`): they run as part of the function that defines them."""
    parts = qualname.split(NESTED)
    while len(parts) > 1 and parts[-1].startswith("<"):
        parts.pop()
    return NESTED.join(parts)
