"""Read an ATen-style C++ file into its definitions (`CppItem`s). Pure.

A careful brace/token scanner, not a compiler: file scope is read statement by statement
(namespaces and `extern "C"` blocks entered, classes/structs one item each, functions with
their bodies skipped as balanced braces, so lambdas and local classes inside kernels are part
of their kernel). Definitions written through macros are recognised: `TORCH_IMPL_FUNC`,
`TORCH_META_FUNC(2)`, `TORCH_PRECOMPUTE_META_FUNC(2)`, `TORCH_LIBRARY_IMPL` blocks,
`DEFINE_DISPATCH`/`DECLARE_DISPATCH`, every `REGISTER_*_DISPATCH` /
`ALSO_REGISTER_*_DISPATCH`, and invocations of the file's own function-like macros (expanded).
A file whose brackets do not balance is read again keeping only the first branch of each
`#if`; if they still do not balance (or a literal is unterminated) the file is reported
unreadable (`CppFile.error`), never half-read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from selection.cpp.declarators import (
    CLASS_KEYS,
    DEFINING_MACROS,
    Declarator,
    class_name,
    declared_name,
    find_declarator,
    parameter_types,
    skip_template_head,
)
from selection.cpp.items import (
    CppFile,
    CppItem,
    fingerprint,
    is_identifier,
    is_macro_name,
    show,
    stubs_in,
    used_names,
)
from selection.cpp.macros import (
    MAX_EXPANSION_DEPTH,
    Macro,
    expand,
    first_branches,
    parse_define,
    split_arguments,
)
from selection.cpp.scan import match_brackets
from selection.cpp.tokens import CppSyntaxError, is_directive, tokenize
from selection.devices import names_other_device

REGISTER_MACRO = re.compile(r"(?:ALSO_)?REGISTER_(?:(\w+)_)?DISPATCH\Z")
STUB_MACROS = frozenset({"DEFINE_DISPATCH", "DECLARE_DISPATCH"})
# After `MACRO(...)`, these tokens mean the macro is part of a longer statement.
_CONTINUES = frozenset(
    {"(", "{", ";", ":", ",", "=", "::", "->", ".", "<", "[", "&", "&&", "*", "const", "noexcept",
     "override", "final"}
)  # fmt: skip
Scope = tuple[str, ...]
HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh", ".inl")
CONDITIONALS = frozenset({"#if", "#ifdef", "#ifndef", "#elif", "#else", "#endif"})
CONDITIONS_KEY = "#if/#endif (conditional compilation)"


def read_cpp(text: str, path: str) -> CppFile:
    """Every definition of one file, keyed by `CppItem.key`."""
    try:
        tokens = tokenize(text)
        try:
            reader = _Reader(path, tokens.texts, tokens.line, {})
        except CppSyntaxError:
            kept = first_branches(tokens.texts)
            texts = [tokens.texts[k] for k in kept]
            reader = _Reader(path, texts, lambda i: tokens.line(kept[min(i, len(kept) - 1)]), {})
        reader.read()
    except CppSyntaxError as exc:
        return CppFile(path, error=str(exc))
    return CppFile(path, reader.items)


class _Reader:
    def __init__(
        self,
        path: str,
        toks: list[str],
        line: Callable[[int], int],
        macros: dict[str, Macro],
        depth: int = 0,
        via: str = "",
    ) -> None:
        self.path, self.toks, self.line = path, toks, line
        self.match = match_brackets(toks, line)
        self.macros, self.depth, self.via = macros, depth, via
        self.header = path.endswith(HEADER_SUFFIXES)
        self.items: dict[str, CppItem] = {}
        self.conditions: list[str] = []

    def read(self, scope: Scope = (), local: bool = False) -> None:
        self._block(0, len(self.toks), scope, local)
        if self.conditions and not self.depth:
            # One item for the file's conditional compilation: a changed `#if` changes
            # which definitions exist; its users are the whole file (selection.links.cpp).
            self.items[CONDITIONS_KEY] = CppItem(
                key=CONDITIONS_KEY, qualname=CONDITIONS_KEY, name="", kind="directives", line=1,
                fingerprint=fingerprint(self.conditions),
            )  # fmt: skip

    # -- file scope -------------------------------------------------------------------------
    def _block(self, index: int, end: int, scope: Scope, local: bool) -> None:
        while index < end:
            token = self.toks[index]
            if is_directive(token):
                self._directive(index, scope)
                index += 1
            elif token == ";":
                index += 1
            else:
                index = self._statement(index, end, scope, local)

    def _statement(self, start: int, end: int, scope: Scope, local: bool) -> int:
        toks, match = self.toks, self.match
        if (
            is_macro_name(toks[start])
            and toks[start] not in DEFINING_MACROS
            and start + 1 < end
            and toks[start + 1] == "("
        ):
            close = match[start + 1]
            after = toks[close + 1] if close + 1 < end else ""
            if after not in _CONTINUES:
                self._macro_statement(start, close, scope, local)
                return close + 1
        index = start
        while index < end:
            token = toks[index]
            if token in ("(", "["):
                index = match[index] + 1
                continue
            if token == ";":
                self._declaration(start, index, scope, local)
                return index + 1
            if token == "{":
                done = self._brace(start, index, scope, local)
                if done is not None:
                    return done
                index = match[index] + 1  # an initializer: the statement goes on
                continue
            index += 1
        self._declaration(start, end, scope, local)
        return end

    def _top(self, start: int, end: int) -> list[int]:
        top: list[int] = []
        index = start
        while index < end:
            token = self.toks[index]
            if not is_directive(token):
                top.append(index)
            index = self.match[index] + 1 if token in ("(", "[", "{") else index + 1
        return top

    def _brace(self, start: int, brace: int, scope: Scope, local: bool) -> int | None:
        """A `{` at statement level: enter, record, or (None) skip it as an initializer."""
        toks, close = self.toks, self.match[brace]
        top = self._top(start, brace)
        words = [toks[k] for k in top]
        head = words[1:] if words[:1] == ["inline"] else words
        if head[:1] == ["namespace"]:
            names = [w for w in head[1:] if w != "::"]
            self._block(brace + 1, close, scope + tuple(names), local or not names)
            return close + 1
        if words[:1] == ["extern"] and len(words) == 2 and words[1].startswith('"'):
            self._block(brace + 1, close, scope, local)
            return close + 1
        rest = skip_template_head(toks, top)
        body_words = words[rest:]
        if any(w == "=" and (p == 0 or body_words[p - 1] != "operator")
               for p, w in enumerate(body_words)):  # fmt: skip
            return None
        declarator = find_declarator(toks, top, self.match)
        keys = [p for p, w in enumerate(words) if p >= rest and (w in CLASS_KEYS or w == "enum")]
        if keys and (declarator is None or top[keys[0]] < declarator.name_start):
            return self._class(start, brace, top, keys[0], scope, local)
        if declarator is None:
            self._record(start, close + 1, scope, local, kind="declaration",
                         name=declared_name(toks, top))  # fmt: skip
            return close + 1
        params_close = self.match[declarator.paren]
        tail = [toks[k] for k in top if k > params_close]
        if ":" in tail and (is_identifier(toks[brace - 1]) or toks[brace - 1] == ">"):
            return None  # a constructor's member initializer `m_{...}`
        self._function(start, brace, top, declarator, scope, local)
        return close + 1

    # -- definitions ------------------------------------------------------------------------
    def _function(
        self, start: int, brace: int, top: list[int], declarator: Declarator, scope: Scope,
        local: bool,
    ) -> None:  # fmt: skip
        toks = self.toks
        close = self.match[brace]
        static = any(toks[k] == "static" for k in top if k < declarator.name_start)
        params = parameter_types(toks, declarator.paren, self.match[declarator.paren])
        qualifiers = "".join(
            t for t in toks[self.match[declarator.paren] + 1 : brace] if t in ("const", "&", "&&")
        )
        macro_kind = DEFINING_MACROS.get(declarator.macro, "")
        if macro_kind == "library":
            self._library(start, brace, declarator, scope)
            return
        kind = macro_kind or "function"
        qualname = "::".join((*scope, declarator.name))
        self._record(
            start, close + 1, scope, local or static, kind=kind,
            name=declarator.simple if kind == "function" else "",
            defines=(declarator.simple,) if kind != "function" else (),
            qualname=qualname, key=f"{qualname}({params}){qualifiers}",
            own=declarator.simple, method="::" in declarator.name,
        )  # fmt: skip

    def _class(
        self, start: int, brace: int, top: list[int], key_pos: int, scope: Scope, local: bool
    ) -> int:
        toks, match = self.toks, self.match
        end = match[brace] + 1
        while end < len(toks) and toks[end] != ";":
            end = match[end] + 1 if toks[end] in ("(", "[", "{") else end + 1
        name = class_name(toks, top, key_pos)
        is_enum = toks[top[key_pos]] == "enum"
        self._record(start, end, scope, local, kind="declaration" if is_enum else "class",
                     name=name)  # fmt: skip
        return end + 1

    def _library(self, start: int, brace: int, declarator: Declarator, scope: Scope) -> None:
        toks = self.toks
        args = [t for t in toks[declarator.paren + 1 : self.match[declarator.paren]] if t != ","]
        key = args[1] if declarator.macro == "TORCH_LIBRARY_IMPL" and len(args) > 1 else ""
        impls: list[tuple[str, frozenset[str]]] = []
        for index in range(brace, self.match[brace]):
            if toks[index] in ("impl", "def") and toks[index + 1] == "(":
                inner = toks[index + 2 : self.match[index + 1]]
                names = [t for t in inner if t.startswith('"')]
                if names:
                    op = names[0].strip('"').split("(", 1)[0].removeprefix("aten::")
                    impls.append((op, used_names(inner).refs))
        qualname = "::".join((*scope, declarator.name))
        item = self._item(start, self.match[brace] + 1, scope, False, kind="library", name="",
                          qualname=qualname, key=qualname)  # fmt: skip
        self._add(replace(item, dispatch_key=key, impls=tuple(impls)))

    def _declaration(self, start: int, end: int, scope: Scope, local: bool) -> None:
        toks = self.toks
        if (
            is_macro_name(toks[start])
            and start + 1 < end
            and toks[start + 1] == "("
            and self.match[start + 1] == end - 1
        ):
            self._macro_statement(start, end - 1, scope, local)
            return
        top = self._top(start, end)
        declarator = find_declarator(toks, top, self.match)
        name = declarator.simple if declarator else declared_name(toks, top)
        self._record(start, end, scope, local, kind="declaration", name=name)

    def _macro_statement(self, start: int, close: int, scope: Scope, local: bool) -> None:
        toks = self.toks
        macro = toks[start]
        args = split_arguments(toks[start + 2 : close])
        shown = f"{macro}({', '.join(show(a) for a in args)})"
        if macro in STUB_MACROS and args:
            stub = _last_identifier(args[-1])
            self._record(start, close + 1, scope, False, kind="stub", name=stub,
                         qualname=f"{macro}({stub})")  # fmt: skip
            return
        register = REGISTER_MACRO.match(macro)
        if register and args:
            self._registration(start, close, macro, register.group(1) or "", args, scope)
            return
        known = self.macros.get(macro)
        if (
            known is not None
            and known.function_like
            and self.depth < MAX_EXPANSION_DEPTH
            and self._expand(known, args, start, scope, local, shown)
        ):
            return
        defines = tuple(a[0] for a in args if len(a) == 1 and _kernel_like(a[0]))
        self._record(start, close + 1, scope, local, kind="invocation", name="",
                     defines=defines, qualname=shown)  # fmt: skip

    def _registration(
        self, start: int, close: int, macro: str, device: str, args: list[list[str]], scope: Scope
    ) -> None:
        """`REGISTER_DISPATCH(stub, &kernel)` (CPU capabilities: AVX2, AVX512, ARCH, ...),
        `REGISTER_CUDA_DISPATCH` (another device), `REGISTER_NO_CPU_DISPATCH` (no kernel)."""
        stub = _last_identifier(args[0])
        kernel = _function_named(args[-1]) if len(args) > 1 else ""
        key = device if names_other_device(device) or device == "PRIVATEUSE1" else "CPU"
        if device == "NO_CPU":
            key, kernel = "none", ""
        if self.path.endswith((".cu", ".cuh")):
            key = "CUDA"
        item = self._item(start, close + 1, scope, False, kind="registration", name=stub,
                          qualname=f"{macro}({stub})")  # fmt: skip
        registers = ((stub, kernel),) if kernel else ()
        other = key not in ("CPU", "PRIVATEUSE1")
        self._add(replace(item, registers=registers, dispatch_key=key, other_device=other))

    def _expand(
        self, macro: Macro, args: list[list[str]], start: int, scope: Scope, local: bool, shown: str
    ) -> bool:
        expanded = expand(macro, args)
        line = self.line(start)
        try:
            sub = _Reader(self.path, expanded, lambda _i: line, self.macros, self.depth + 1,
                          self.via or shown)  # fmt: skip
            sub.read(scope, local)
        except CppSyntaxError:
            return False
        for item in sub.items.values():
            self._add(item)
        return bool(sub.items)

    def _directive(self, index: int, scope: Scope) -> None:
        directive = self.toks[index]
        if directive.split(" ", 1)[0] in CONDITIONALS:
            self.conditions.append(directive)
            return
        macro = parse_define(directive)
        if macro is None:
            return
        self.macros[macro.name] = macro
        self._record(index, index + 1, scope, not self.header, kind="macro", name=macro.name,
                     qualname=macro.name, key=f"#define {macro.name}",
                     refs_from=list(macro.body))  # fmt: skip

    # -- recording --------------------------------------------------------------------------
    def _record(self, start: int, end: int, scope: Scope, local: bool, *, kind: str, name: str,
                qualname: str = "", key: str = "", defines: tuple[str, ...] = (), own: str = "",
                refs_from: list[str] | None = None, method: bool = False) -> None:  # fmt: skip
        self._add(self._item(start, end, scope, local, kind=kind, name=name, qualname=qualname,
                             key=key, defines=defines, own=own, refs_from=refs_from,
                             method=method))  # fmt: skip

    def _item(self, start: int, end: int, scope: Scope, local: bool, *, kind: str, name: str,
              qualname: str = "", key: str = "", defines: tuple[str, ...] = (), own: str = "",
              refs_from: list[str] | None = None, method: bool = False) -> CppItem:  # fmt: skip
        tokens = self.toks[start:end]
        uses = used_names(refs_from if refs_from is not None else tokens)
        skip = {own or name}
        # A nameless statement (`using namespace vec;`) is known by its text, not its line.
        qualname = qualname or "::".join((*scope, name or show(tokens[:12])))
        item = CppItem(
            key=key or qualname, qualname=qualname, name=name, kind=kind, line=self.line(start),
            fingerprint=fingerprint(tokens), calls=uses.calls - skip, refs=uses.refs - skip,
            values=uses.values, members=uses.members, dispatched=uses.dispatched,
            qualifiers=uses.qualifiers, arguments=uses.arguments,
            stubs=stubs_in(uses.refs - skip), defines=defines, file_local=local and not self.header,
            via=self.via, method=method,
        )  # fmt: skip
        return item

    def _add(self, item: CppItem) -> None:
        key, count = item.key, 1
        while key in self.items:
            count += 1
            key = f"{item.key}#{count}"
        if key != item.key:
            item = replace(item, key=key)
        self.items[key] = item


def _last_identifier(tokens: list[str]) -> str:
    names = [t for t in tokens if is_identifier(t)]
    return names[-1] if names else ""


def _function_named(tokens: list[str]) -> str:
    """`&at::native::add_kernel` / `add_kernel<float>` -> `add_kernel`."""
    if "<" in tokens:
        tokens = tokens[: tokens.index("<")]
    return _last_identifier(tokens)


def _kernel_like(name: str) -> bool:
    """An argument of an unknown macro that may name what it generates: `sin`, `add_out`,
    not a type (`BFloat16`, `int64_t`)."""
    return is_identifier(name) and name.islower() and not name.endswith("_t")
