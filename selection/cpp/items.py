"""What the reader gives per definition: `CppItem`, and the names a token run uses. Pure."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from selection.cpp.tokens import is_directive
from selection.links.base import fewest_arguments

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
    values: frozenset[str] = frozenset()  # passed as a function: `&f`, `g(x, f)`
    members: frozenset[str] = frozenset()  # used as `x.name` / `p->name`
    dispatched: frozenset[str] = frozenset()  # used as `at::name` (the op API, if it is one)
    qualifiers: frozenset[str] = frozenset()  # used as `name::...`
    stubs: frozenset[str] = frozenset()  # dispatch stubs it calls or names
    registers: tuple[tuple[str, str], ...] = ()  # (stub, kernel function) it registers
    defines: tuple[str, ...] = ()  # kernel names it defines ("add_out"; meta: "add.Tensor")
    dispatch_key: str = ""  # registration: CPU | CUDA | ...; library: the block's key
    impls: tuple[tuple[str, frozenset[str]], ...] = ()  # library: (op, names it binds)
    file_local: bool = False  # static / anonymous namespace / a .cpp's macro
    method: bool = False  # defined as `Class::name` (reached through `x.name(` too)
    via: str = ""  # the macro invocation that generated it
    other_device: bool = False  # registers a kernel for another device only
    arguments: tuple[tuple[str, int | None], ...] = ()  # Uses.arguments

    def passes(self, name: str) -> int | None:
        """The fewest arguments its calls `at::name(` / `x.name(` pass (receiver counted);
        None when not known."""
        return dict(self.arguments).get(name)

    @property
    def lookup_names(self) -> tuple[str, ...]:
        return tuple(n for n in (self.name, *self.defines) if n)

    @property
    def owner(self) -> str:
        """`Foo` for a method defined as `Foo::bar` (its callers name the class somewhere)."""
        if not self.method or "::" not in self.qualname:
            return ""
        return self.qualname.rsplit("::", 2)[-2].split("<", 1)[0]

    def uses(self, name: str, target: str, op_api: frozenset[str]) -> bool:
        """Does this definition reach `name`, a definition of kind `target` ("function",
        "method:<Class>", "type", "any", "op": an ATen op's C++ API)? A function is reached by a call, its address or
        being passed along, not by a variable of the same name; `x.name(` only reaches a
        method (of a class this definition names); `at::name(` of an op's API goes through
        the dispatcher (an op, not this function)."""
        if name not in self.refs:
            return False
        if target == "op":  # the op's API: `at::add(`, `at::add_out(`, `self.add(`
            return name in self.dispatched or name in self.members
        if name in self.dispatched and name not in op_api:
            return True
        if target.startswith("method:"):
            owner = target.removeprefix("method:")
            named = owner in self.refs or not owner
            return name in self.calls or name in self.values or (named and name in self.members)
        if target == "function":
            return name in self.calls or name in self.values
        other = self.refs - self.members - self.dispatched
        return name in other


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
    """How a token run uses each identifier (one name may be used several ways)."""

    calls: frozenset[str]  # `f(`, `f<T>(`, `F{`
    values: frozenset[str]  # `&f`, or `f` alone as an argument (not a local of that name)
    members: frozenset[str]  # after `.` / `->`
    dispatched: frozenset[str]  # after `at::` / `_ops::` (an op's API, when the name is one)
    qualifiers: frozenset[str]  # before `::` (a namespace or class)
    refs: frozenset[str]  # every identifier, all of the above and types, variables, ...
    # per name used as `at::name` or `x.name`: the fewest arguments any of those uses passes,
    # the receiver of `x.name(` counted; None where one use's count is not known (see
    # `call_arguments`) or the name is not called there (passed along, it may be called with
    # anything)
    arguments: tuple[tuple[str, int | None], ...] = ()


DISPATCHER_QUALIFIERS = frozenset({"at", "_ops"})
FOREIGN_QUALIFIERS = frozenset({"std", "c10", "caffe2", "fmt", "sleef"})
_DECLARES_AFTER = frozenset({"auto", ">", "*", "&", "&&", "int", "float", "double", "bool",
                             "char", "long", "short", "unsigned", "signed", "const"})  # fmt: skip
_ENDS_DECLARATOR = frozenset({"=", ";", ",", ")", "{", "[", ":"})


def used_names(tokens: list[str]) -> Uses:
    """The identifiers a token run uses, by how. Directives contribute their identifiers
    (a `#define` inside a body uses names too); `std::copy` is not ATen's `copy`."""
    found: dict[str, set[str]] = {k: set() for k in ("calls", "values", "members", "dispatched",
                                                        "qualifiers", "refs", "args", "locals")}  # fmt: skip
    size = len(tokens)
    arguments: dict[str, int | None] = {}
    for index, token in enumerate(tokens):
        if is_directive(token):
            found["refs"].update(
                t for t in re.findall(r"[A-Za-z_]\w*", token[1:]) if is_identifier(t)
            )
            continue
        if not is_identifier(token):
            continue
        before = tokens[index - 1] if index else ""
        before2 = tokens[index - 2] if index > 1 else ""
        after = tokens[index + 1] if index + 1 < size else ""
        if before == "::" and before2 in FOREIGN_QUALIFIERS:
            continue
        found["refs"].add(token)
        lead = index - 1  # the token before a qualified id `a::b::name`
        while lead > 1 and tokens[lead] == "::" and is_identifier(tokens[lead - 1]):
            lead -= 2
        kind = _occurrence(tokens, index, before, before2, after, tokens[lead] if lead >= 0 else "",
                           tokens[lead - 1] if lead > 0 else "")  # fmt: skip
        if kind:
            found[kind].add(token)
        if kind in ("members", "dispatched") and after != "::":  # not `at::symint::`
            opens = _call_opens(tokens, index + 1)
            passed = call_arguments(tokens, opens) if opens is not None else None
            if passed is not None and kind == "members":
                passed += 1  # the receiver
            arguments[token] = fewest_arguments(arguments.get(token, passed), passed)
    values = found["values"] | (found["args"] - found["locals"])
    return Uses(
        frozenset(found["calls"]), frozenset(values), frozenset(found["members"]),
        frozenset(found["dispatched"]), frozenset(found["qualifiers"]), frozenset(found["refs"]),
        tuple(sorted(arguments.items())),
    )  # fmt: skip


# Tokens whose commas cannot be told from argument separators: `<` opens template arguments
# or compares; a directive inside a call splits it. The call's count is then not known.
_OPENING = {"(": ")", "[": "]", "{": "}"}


def call_arguments(tokens: list[str], open_at: int, limit: int = 2000) -> int | None:
    """The number of arguments of the call whose `(` is `tokens[open_at]`: C++ has no
    keywords, so a call passing n arguments may omit only what follows the n-th (an API
    packing several schema arguments into one, `TensorOptions`, passes fewer than it
    covers: it only ever looks like omitting more). None when it cannot be counted (a `<`
    other than a called template's arguments, `f<T>(`: a less-than or a type's; a directive;
    no `)` within `limit` tokens)."""
    closers: list[str] = []
    commas, empty = 0, True
    index, stop = open_at - 1, min(len(tokens), open_at + limit)
    while index + 1 < stop:
        index += 1
        token = tokens[index]
        if token == "<":
            end = _template_arguments_end(tokens, index)
            if not _called_template(tokens, index, min(end, stop)):
                return None  # a less-than, or template arguments of a type
            index = end - 1  # `size<T>(`: skip to its `(`
            continue
        if is_directive(token):
            return None
        if token in _OPENING:
            if closers:
                empty = False
            closers.append(_OPENING[token])
            continue
        if closers and token == closers[-1]:
            closers.pop()
            if not closers:
                return 0 if empty else commas + 1
            continue
        empty = False
        if token == "," and len(closers) == 1:
            commas += 1
    return None


def _occurrence(
    tokens: list[str], index: int, before: str, before2: str, after: str, lead: str, lead2: str
) -> str:
    """`lead`, `lead2`: the two tokens before the whole qualified id (`&at::native::f`)."""
    if lead in (".", "->"):
        return "members"
    if before == "::" and (before2 in DISPATCHER_QUALIFIERS or _symint_api(tokens, index)):
        return "dispatched"
    if after == "::":
        return "qualifiers"
    if after == "<":
        after = _after_template_arguments(tokens, index + 1)
    if after in ("(", "{"):
        return "calls"
    if lead == "&" and not (is_identifier(lead2) or lead2 in (")", "]")):
        return "values"
    if after in _ENDS_DECLARATOR and (is_identifier(before) or before in _DECLARES_AFTER):
        return "locals"  # `int64_t size = ...`, a parameter `(const Tensor& self)`
    if lead in ("(", ",", "{", "=", "?", ":", "return") and after in (",", ")", "}", ";", ":"):
        return "args"  # passed along: `cpu_kernel(iter, f)`, `{f, g}`, `c ? f : g`
    return ""


# Tokens that end a comparison's operand but never stand in a called template's arguments
# here: `a < b && c > (d)` is two comparisons, not `a<...>(d)`.
_NOT_IN_TEMPLATE_ARGUMENTS = frozenset({"&&", "||", "?", ";", "{", "}"})


def _called_template(tokens: list[str], opens: int, end: int) -> bool:
    """Do `tokens[opens:end]` read as the template arguments of a call (`size<T>(`): a name
    before, `(` after, and between them no `&&`/`||`/`?` and no `)` or `]` closing what it
    did not open (`f(i < n), g > (c)` is two comparisons)? Counting a comparison's `<` as
    template arguments could only count too few arguments; refusing makes the count unknown."""
    if not (is_identifier(tokens[opens - 1]) and end < len(tokens) and tokens[end] == "("):
        return False
    depth = 0
    for token in tokens[opens + 1 : end - 1]:
        if token in _NOT_IN_TEMPLATE_ARGUMENTS:
            return False
        if token in ("(", "["):
            depth += 1
        elif token in (")", "]"):
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _symint_api(tokens: list[str], index: int) -> bool:
    """`at::symint::slice<T>(...)`: the op API generic over int and SymInt."""
    return index > 3 and tokens[index - 4 : index - 1] == ["at", "::", "symint"]


def _call_opens(tokens: list[str], start: int) -> int | None:
    """Where the call of the name before `start` opens its `(`, past template arguments
    (`at::symint::slice<T>(`); None when the name is not called there."""
    after = tokens[start] if start < len(tokens) else ""
    if after == "<":
        end = _template_arguments_end(tokens, start)
        return end if _called_template(tokens, start, end) else None
    return start if after == "(" else None


def _template_arguments_end(tokens: list[str], start: int, limit: int = 40) -> int:
    """The index after the `<...>` opening at `start` (`len(tokens)` when it does not look
    like template arguments)."""
    depth = 0
    for index in range(start, min(len(tokens), start + limit)):
        token = tokens[index]
        if token == "<":
            depth += 1
        elif token == ">":
            depth -= 1
            if depth == 0:
                return index + 1
        elif token in (";", "{", "}"):
            break
    return len(tokens)


def _after_template_arguments(tokens: list[str], start: int, limit: int = 40) -> str:
    """The token after `<...>` opening at `start` ("" when it does not look like template
    arguments): `f<T>(` is a call, `f<T>,` a function passed along."""
    end = _template_arguments_end(tokens, start, limit)
    return tokens[end] if end < len(tokens) else ""


def stubs_in(refs: frozenset[str]) -> frozenset[str]:
    return frozenset(r for r in refs if r.endswith(STUB_SUFFIX))
