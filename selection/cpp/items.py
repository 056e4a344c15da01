"""What the reader gives per definition: `CppItem`, and the names a token run uses. Pure."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from selection.cpp.tokens import is_directive

# Words that are never the name of something a change can reach.
KEYWORDS: frozenset[str] = frozenset(
    """alignas alignof and asm auto bool break case catch char char16_t char32_t char8_t class
    co_await co_return co_yield const const_cast consteval constexpr constinit continue
    decltype default delete do double dynamic_cast else enum explicit export extern false
    final float for friend goto if inline int long mutable namespace new noexcept not nullptr
    operator or override private protected public register reinterpret_cast requires return
    short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void
    volatile wchar_t while __attribute__ __declspec __restrict__ __restrict""".split()  # noqa: SIM905 (a word list reads better than 90 quoted strings)
)

_WORDISH = re.compile(r"[\w$\"']")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*\Z")
STUB_SUFFIX = "_stub"


def is_identifier(token: str) -> bool:
    return bool(_IDENT.match(token)) and token not in KEYWORDS


def is_macro_name(token: str) -> bool:
    """ALL_CAPS identifiers: by ATen's convention, macros."""
    return len(token) > 1 and token.isupper() and is_identifier(token)


@dataclass(frozen=True)
class CppItem:
    """One definition of a C++ file.

    kind: function | impl (TORCH_IMPL_FUNC) | meta (TORCH_META_FUNC*) | class | macro |
    declaration | stub (DEFINE/DECLARE_DISPATCH) | registration (REGISTER_*DISPATCH) |
    library (TORCH_LIBRARY_IMPL blocks) | invocation (a macro call at file scope).
    """

    key: str  # unique in its file: qualified name plus parameter types
    qualname: str  # "at::native::add_kernel", "TORCH_IMPL_FUNC(add_out)"
    name: str  # what users write to reach it ("add_kernel", "add_stub"); "" for none
    kind: str
    line: int
    fingerprint: str  # of its tokens: comments and layout do not count
    calls: frozenset[str] = frozenset()
    refs: frozenset[str] = frozenset()  # every identifier it uses (calls included)
    members: frozenset[str] = frozenset()  # used only as `x.name` / `p->name`
    dispatched: frozenset[str] = frozenset()  # used only as `at::name` (the op API)
    stubs: frozenset[str] = frozenset()  # dispatch stubs it calls or names
    registers: tuple[tuple[str, str], ...] = ()  # (stub, kernel function) it registers
    defines: tuple[str, ...] = ()  # kernel names it defines ("add_out"; meta: "add.Tensor")
    dispatch_key: str = ""  # registration: CPU | CUDA | ...; library: the block's key
    impls: tuple[tuple[str, frozenset[str]], ...] = ()  # library: (op, names it binds)
    file_local: bool = False  # static / anonymous namespace / a .cpp's macro
    method: bool = False  # defined as `Class::name` (reached through `x.name(` too)
    via: str = ""  # the macro invocation that generated it
    other_device: bool = False  # registers a kernel for another device only

    @property
    def lookup_names(self) -> tuple[str, ...]:
        return tuple(n for n in (self.name, *self.defines) if n)

    def uses(self, name: str, as_member: bool, op_api: frozenset[str]) -> bool:
        """Does this definition reach `name` directly? `x.name(` only reaches a method, and
        `at::name(` of an op's API goes through the dispatcher (an op, not this function)."""
        if name not in self.refs:
            return False
        if name in self.members:
            return as_member
        if name in self.dispatched:
            return name not in op_api
        return True


@dataclass
class CppFile:
    path: str
    items: dict[str, CppItem] = field(default_factory=dict)
    error: str = ""  # why the file could not be read (then `items` is empty)


def show(tokens: list[str]) -> str:
    """Tokens as a person writes them: `std::optional<double>`, `const Tensor& self`."""
    out = ""
    for token in tokens:
        if out and _WORDISH.match(token[0]) and (_WORDISH.match(out[-1]) or out[-1] in "*&"):
            out += " "
        elif out and token in ("&", "&&", "*") and out[-1] not in "(<,":
            pass
        elif out.endswith(",") and token not in (")", ">"):
            out += " "
        out += token
    return out


def fingerprint(tokens: list[str]) -> str:
    return hashlib.blake2b("\x00".join(tokens).encode(), digest_size=12).hexdigest()


@dataclass(frozen=True)
class Uses:
    calls: frozenset[str]  # in call position: `f(`, `f<T>(`, `F{`
    refs: frozenset[str]  # every identifier
    members: frozenset[str]  # only ever after `.` / `->`
    dispatched: frozenset[str]  # only ever after `at::` / `_ops::`


DISPATCHER_QUALIFIERS = frozenset({"at", "_ops"})
FOREIGN_QUALIFIERS = frozenset({"std", "c10", "caffe2", "fmt", "sleef"})


def used_names(tokens: list[str]) -> Uses:
    """The identifiers a token run uses, by how. Directives contribute their identifiers
    (a `#define` inside a body uses names too)."""
    calls: set[str] = set()
    plain: set[str] = set()
    members: set[str] = set()
    dispatched: set[str] = set()
    size = len(tokens)
    for index, token in enumerate(tokens):
        if is_directive(token):
            plain.update(t for t in re.findall(r"[A-Za-z_]\w*", token[1:]) if is_identifier(t))
            continue
        if not is_identifier(token):
            continue
        before = tokens[index - 1] if index else ""
        if before in (".", "->"):
            members.add(token)
        elif before == "::" and index > 1 and tokens[index - 2] in DISPATCHER_QUALIFIERS:
            dispatched.add(token)
        elif before == "::" and index > 1 and tokens[index - 2] in FOREIGN_QUALIFIERS:
            continue  # `std::copy` is not ATen's `copy`
        else:
            plain.add(token)
        after = tokens[index + 1] if index + 1 < size else ""
        if after in ("(", "{") or (after == "<" and _template_call(tokens, index + 1)):
            calls.add(token)
    return Uses(
        frozenset(calls),
        frozenset(plain | members | dispatched),
        frozenset(members - plain),
        frozenset(dispatched - plain - members),
    )


def _template_call(tokens: list[str], start: int, limit: int = 40) -> bool:
    """`<...>(` right after an identifier: an explicit template call."""
    depth = 0
    for index in range(start, min(len(tokens), start + limit)):
        token = tokens[index]
        if token == "<":
            depth += 1
        elif token == ">":
            depth -= 1
            if depth == 0:
                return index + 1 < len(tokens) and tokens[index + 1] in ("(", "{", "::")
        elif token in (";", "{", "}"):
            return False
    return False


def stubs_in(refs: frozenset[str]) -> frozenset[str]:
    return frozenset(r for r in refs if r.endswith(STUB_SUFFIX))
