"""Token-level scans that need no structure: bracket matching, and the names a file that
could not be structured appears to define. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable

from selection.cpp.items import is_identifier
from selection.cpp.tokens import CppSyntaxError


def match_brackets(toks: list[str], line: Callable[[int], int]) -> list[int]:
    """match[i] = index of the bracket closing toks[i] (for openers; -1 elsewhere)."""
    pairs = {")": "(", "]": "[", "}": "{"}
    match = [-1] * len(toks)
    stack: list[int] = []
    for index, token in enumerate(toks):
        if token in ("(", "[", "{"):
            stack.append(index)
        elif token in pairs:
            if not stack or toks[stack[-1]] != pairs[token]:
                raise CppSyntaxError(line(index), f"unbalanced {token!r}")
            match[stack.pop()] = index
    if stack:
        raise CppSyntaxError(line(stack[-1]), f"{toks[stack[-1]]!r} never closed")
    return match


_DEFINITION_HEAD = re.compile(
    r"\b(?:TORCH_IMPL_FUNC|TORCH_META_FUNC2?|\w*REGISTER_\w*DISPATCH|DEFINE_DISPATCH)\s*\(\s*(\w+)"
    r"|\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:noexcept\s*)?\{"
)


def definitions_by_scan(text: str) -> list[str]:
    """Names that look defined in a file the reader could not structure (`name(...) {`,
    `TORCH_IMPL_FUNC(name)`, `REGISTER_DISPATCH(stub, ...)`): what its dependents are found by."""
    names = {a or b for a, b in _DEFINITION_HEAD.findall(text)}
    return sorted(n for n in names if is_identifier(n) and n not in _NOT_DEFINITIONS)


_NOT_DEFINITIONS = frozenset({"if", "for", "while", "switch", "catch", "TORCH_CHECK"})
