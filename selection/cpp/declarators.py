"""Reading one file-scope statement's head: is it a function, a class, a namespace? Pure.

The reader hands over `top`: the indices of a statement's tokens at bracket depth 0 (the
contents of `(...)` and `[...]` skipped, openers kept). From those this module finds the
declarator's parameter list, the declared name and the parameter types that tell overloads
apart. No real C++ grammar: the rules ATen's sources follow (macros are ALL_CAPS, attributes
are `alignas(...)` / `__attribute__((...))` / `[[...]]`).
"""

from __future__ import annotations

from dataclasses import dataclass

from selection.cpp.items import KEYWORDS, is_identifier, is_macro_name, show
from selection.cpp.macros import split_arguments

# Macros that open a definition, and what the definition is.
DEFINING_MACROS: dict[str, str] = {
    "TORCH_IMPL_FUNC": "impl",
    "TORCH_META_FUNC": "meta",
    "TORCH_META_FUNC2": "meta",
    "TORCH_PRECOMPUTE_META_FUNC": "meta",
    "TORCH_PRECOMPUTE_META_FUNC2": "meta",
    "TORCH_LIBRARY_IMPL": "library",
    "TORCH_LIBRARY": "library",
    "TORCH_LIBRARY_FRAGMENT": "library",
}
CLASS_KEYS = frozenset({"class", "struct", "union"})
# `word(` that is not a declarator.
NOT_DECLARATOR = frozenset({"alignas", "__attribute__", "__declspec", "decltype", "noexcept",
                            "requires", "static_assert", "sizeof", "alignof", "throw",
                            "C10_ALIGNAS"})  # fmt: skip


@dataclass(frozen=True)
class Declarator:
    paren: int  # token index of the parameter list's "("
    name_start: int  # first token of the declared name
    name: str  # as written, template arguments included: "Foo<T>::bar", "operator()"
    simple: str  # the last component: "bar", "operator()"
    macro: str = ""  # a DEFINING_MACROS name when the definition is written through one


def skip_template_head(toks: list[str], top: list[int]) -> int:
    """Position in `top` after a leading `template <...>` (several, for member templates)."""
    pos = 0
    while pos < len(top) and toks[top[pos]] == "template":
        pos += 1
        depth = 0
        while pos < len(top):
            token = toks[top[pos]]
            pos += 1
            if token == "<":
                depth += 1
            elif token == ">":
                depth -= 1
                if depth <= 0:
                    break
    return pos


def find_declarator(toks: list[str], top: list[int], match: list[int]) -> Declarator | None:
    start = skip_template_head(toks, top)
    words = [toks[k] for k in top]
    for pos in range(start, len(top)):
        if words[pos] in DEFINING_MACROS and pos + 1 < len(top) and words[pos + 1] == "(":
            return _macro_declarator(toks, top, pos, words[pos], match)
    if "operator" in words[start:]:
        return _operator_declarator(toks, top, words.index("operator", start), match)
    found: Declarator | None = None
    for pos in range(max(start, 1), len(top)):
        if words[pos] != "(":
            continue
        prev = words[pos - 1]
        if prev == ">" or (is_identifier(prev) and prev not in NOT_DECLARATOR):
            candidate = _named(toks, top[pos], top[0])
            if candidate is None:
                continue
            if not is_macro_name(candidate.simple):
                return candidate
            found = found or candidate
    return found


def _macro_declarator(
    toks: list[str], top: list[int], pos: int, macro: str, match: list[int]
) -> Declarator:
    """`TORCH_IMPL_FUNC(add_out) (args)`: the name is the macro's argument list."""
    paren = top[pos + 1]
    close = match[paren]
    inner = [t for t in toks[paren + 1 : close] if t != ","]
    if DEFINING_MACROS[macro] == "library":
        shown = ", ".join(inner[:2])
        return Declarator(paren, top[pos], f"{macro}({shown})", macro, macro)
    simple = ".".join(inner[:2]) if macro.endswith("2") else "".join(inner[:1])
    params = top[pos + 2] if pos + 2 < len(top) and toks[top[pos + 2]] == "(" else paren
    return Declarator(params, top[pos], f"{macro}({', '.join(inner[:2])})", simple, macro)


def _operator_declarator(
    toks: list[str], top: list[int], pos: int, match: list[int]
) -> Declarator | None:
    first = top[pos] + 1
    if first >= len(toks):
        return None
    if toks[first] == "(" and match[first] == first + 1:
        paren, symbol = first + 2, "()"
    else:
        paren = first
        while paren < len(toks) and toks[paren] != "(":
            paren += 1
        symbol = " ".join(toks[first:paren]) if paren - first > 1 else "".join(toks[first:paren])
    if paren >= len(toks) or toks[paren] != "(":
        return None
    named = _named(toks, top[pos], top[0], include_last=False)
    prefix = named.name + "::" if named is not None else ""
    return Declarator(paren, top[pos], f"{prefix}operator{symbol}", f"operator{symbol}")


def _named(toks: list[str], paren: int, floor: int, include_last: bool = True) -> Declarator | None:
    """The qualified id written just before `paren`: `a::b<T>::c`."""
    index = paren - 1
    parts: list[str] = []
    if not include_last:  # `Foo::operator`: the qualifier before the keyword
        if index < floor or toks[index] != "::":
            return None
        index -= 1
    while index >= floor:
        end = index
        if toks[index] == ">":
            opened = _template_open(toks, index, floor)
            if opened is None:
                return None
            index = opened - 1
        if index < floor or not is_identifier(toks[index]):
            return None
        if index - 1 >= floor and toks[index - 1] == "~":
            index -= 1
        parts.insert(0, "".join(toks[index : end + 1]))
        if index - 1 >= floor and toks[index - 1] == "::":
            index -= 2
            continue
        break
    if not parts:
        return None
    simple = parts[-1].split("<", 1)[0]
    return Declarator(paren, index, "::".join(parts), simple)


def _template_open(toks: list[str], close: int, floor: int) -> int | None:
    depth = 0
    for index in range(close, floor - 1, -1):
        if toks[index] == ">":
            depth += 1
        elif toks[index] == "<":
            depth -= 1
            if depth == 0:
                return index
        elif toks[index] in (";", "{", "}"):
            return None
    return None


def parameter_types(toks: list[str], paren: int, close: int) -> str:
    """`(const Tensor& self, int64_t dim = 0)` -> `const Tensor&,int64_t`: overloads apart,
    parameter renames and default-argument edits not."""
    shown: list[str] = []
    for param in split_arguments(toks[paren + 1 : close], angles=True) or [[]]:
        if "=" in param:
            param = param[: param.index("=")]
        if len(param) > 1 and is_identifier(param[-1]) and param[-2] not in ("::", "struct"):
            param = param[:-1]
        shown.append(show(param))
    return ",".join(shown) if shown != [""] else ""


def class_name(toks: list[str], top: list[int], key_pos: int) -> str:
    """`struct TORCH_API Foo final : Base {` -> `Foo` (template arguments kept)."""
    names: list[int] = []
    for pos in range(key_pos + 1, len(top)):
        token = toks[top[pos]]
        if token in (":", "{"):
            break
        if is_identifier(token):
            names.append(pos)
        elif token == "<" and names:
            break
    plain = [p for p in names if not is_macro_name(toks[top[p]])]
    chosen = plain[0] if plain else (names[-1] if names else -1)
    return toks[top[chosen]] if chosen >= 0 else ""


def declared_name(toks: list[str], top: list[int]) -> str:
    """The name a `;`-statement declares: `using X = ...` -> X, `T x = ...` -> x, `T x;` -> x."""
    words = [toks[k] for k in top]
    if not words or words[0] in ("static_assert", "friend") or words[:2] == ["using", "namespace"]:
        return ""
    if words[0] == "using" and "=" in words:
        return words[1]
    if words[0] in ("namespace", "enum") and len(words) > 1:
        rest = [w for w in words[1:] if is_identifier(w) and w not in ("class", "struct")]
        return rest[0] if rest else ""
    stop = len(words)
    for pos, word in enumerate(words):
        if word in ("=", "{", "[", ":") and pos > 0:
            stop = pos
            break
    named = [w for w in words[:stop] if is_identifier(w) and w not in KEYWORDS]
    return named[-1] if named else ""
