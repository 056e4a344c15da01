"""Preprocessor pieces the reader needs: `#define`s, macro expansion, `#if` branches. Pure.

ATen generates many kernels with file-local macros (`CREATE_BINARY_TORCH_IMPL_FUNC(add_out,
add_stub)` expands to `TORCH_IMPL_FUNC(add_out) (...) { add_stub(...); }`); expanding the
invocations of the macros a file defines lets those generated functions be read and compared
like written ones (a change to the macro's body changes every function it generates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selection.cpp.tokens import is_directive, tokenize

_DEFINE = re.compile(r"#define ([A-Za-z_]\w*)(\([^)]*\))?(?: (.*))?$", re.DOTALL)
MAX_EXPANSION_DEPTH = 4


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...] | None  # None: object-like
    body: tuple[str, ...]

    @property
    def function_like(self) -> bool:
        return self.params is not None


def parse_define(directive: str) -> Macro | None:
    """`#define NAME(a, b) body` -> Macro; None for other directives."""
    found = _DEFINE.match(directive)
    if found is None:
        return None
    name, params, body = found.group(1), found.group(2), found.group(3) or ""
    body_tokens = tuple(tokenize(body, directives=False).texts) if body else ()
    if params is None:
        return Macro(name, None, body_tokens)
    names = tuple(p.strip() for p in params[1:-1].split(",") if p.strip())
    return Macro(name, names, body_tokens)


def split_arguments(tokens: list[str], angles: bool = False) -> list[list[str]]:
    """Top-level comma-separated arguments of a token list (without the outer parentheses);
    `angles`: `<...>` nests too (parameter lists: `std::pair<int, int> p`)."""
    openers, closers = ("([{<", ")]}>") if angles else ("([{", ")]}")
    args: list[list[str]] = [[]]
    depth = 0
    for token in tokens:
        if len(token) == 1 and token in openers:
            depth += 1
        elif len(token) == 1 and token in closers:
            depth -= 1
        if token == "," and depth == 0:
            args.append([])
        else:
            args[-1].append(token)
    return [] if args == [[]] else args


def expand(macro: Macro, args: list[list[str]]) -> list[str]:
    """One expansion: parameters substituted, `#p` stringified, `a ## b` pasted."""
    params = macro.params or ()
    binding: dict[str, list[str]] = {p: a for p, a in zip(params, args, strict=False)}
    if params and params[-1] == "...":
        binding["__VA_ARGS__"] = [t for a in args[len(params) - 1 :] for t in [*a, ","]][:-1]
    out: list[str] = []
    body = list(macro.body)
    index = 0
    while index < len(body):
        token = body[index]
        if token == "#" and index + 1 < len(body) and body[index + 1] in binding:
            out.append('"' + " ".join(binding[body[index + 1]]) + '"')
            index += 2
            continue
        if token == "##" and out and index + 1 < len(body):
            right = binding.get(body[index + 1], [body[index + 1]])
            out[-1] += right[0] if right else ""
            out.extend(right[1:])
            index += 2
            continue
        out.extend(binding.get(token, [token]))
        index += 1
    return out


def first_branches(tokens: list[str]) -> list[int]:
    """Indices of the tokens in the first branch of every `#if`/`#ifdef` (`#elif`/`#else`
    parts dropped): a fallback for files whose braces only balance per branch."""
    kept: list[int] = []
    skipping: list[bool] = []  # per open #if: are we inside a dropped branch?
    for index, token in enumerate(tokens):
        if is_directive(token):
            word = token[1:].split(" ", 1)[0]
            if word in ("if", "ifdef", "ifndef"):
                skipping.append(False)
                continue
            if word in ("elif", "else") and skipping:
                skipping[-1] = True
                continue
            if word == "endif" and skipping:
                skipping.pop()
                continue
        if not any(skipping):
            kept.append(index)
    return kept
