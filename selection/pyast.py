"""Python sources as comparable symbols: normalized ASTs and the names each symbol uses.

Pure. Formatting, comments and docstrings do not make a symbol "changed"; a second,
device-agnostic comparison also ignores code that only runs on another device (see
`devices`), so that a change confined to a CUDA branch or an MPS decorator is told apart.
For speed, symbols are first compared by their source text; the normalized ASTs are only
built for the few symbols whose text differs.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import re
import string
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeGuard

from selection.devices import names_cpu_test_decorator, names_other_device
from selection.python.chains import last_name
from selection.python.runtime_annotations import (
    UNKNOWN,
    Fields,
    ModuleReaders,
    Reads,
    class_fields,
    dataclass_words,
    function_reads,
    module_fields,
    reads_text,
    unquoted,
)

MODULE_SYMBOL = "<module>"
# what tells two pieces of code apart by behaviour (`normalized_fingerprint`, bound to where
# the code stands: Symbol.fingerprinter)
Fingerprint = Callable[[list[ast.AST]], str]


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return body[1:] or [ast.Pass()]
    return body


def decorator_other_device(node: ast.expr, tests: bool = False) -> bool:
    """`@onlyCUDA`, `@skipCUDAIfNoMagma`, `@torch.cuda.amp.autocast()`; in test code also the
    CPU-only ones (`@onlyCPU`, `@dtypesIfCPU`): another device's for a PrivateUse1 test."""
    target = node.func if isinstance(node, ast.Call) else node
    if tests:
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if names_cpu_test_decorator(name):
            return True
    while isinstance(target, ast.Attribute):
        if names_other_device(target.attr):
            return True
        target = target.value
    return isinstance(target, ast.Name) and names_other_device(target.id)


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


_DOCSTRING_SETTERS = ("add_docstr", "_add_docstr")
_ANNOTATION_FIELDS = {"annotation", "returns"}
_ANNOTATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.arg, ast.AnnAssign)


# TorchScript's overload stubs: `_check_overload_body` accepts only `pass` or `...` there,
# so a docstring added to one fails `import torch` (it is code, not documentation).
_CHECKED_STUBS = frozenset({"_overload", "_overload_method"})


def _checked_stub(node: ast.AST) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any(last_name(d) in _CHECKED_STUBS for d in decorators)


def _is_docstring_setter(node: ast.Call) -> bool:
    return last_name(node) in _DOCSTRING_SETTERS


def _field_value(node: ast.AST, name: str, outside: _Reading) -> object:
    """A field as the behaviour comparison sees it (see _feed); `outside`: where the node
    stands."""
    value = getattr(node, name, None)
    if name == "body" and isinstance(node, _DEFINITIONS) and not _checked_stub(node):
        body = list(value or [])
        if node.name in outside.readers.formatted and not outside.in_function:
            return _with_format_fields(body)  # its module formats its docstring
        return _strip_docstring(body)
    if name == "args" and isinstance(node, ast.Call) and _is_docstring_setter(node):
        # add_docstr(fn, "..."): the text is documentation, what formats it is code
        args = list(value or [])
        return [*args[:1], *(_formatting(a) for a in args[1:2]), *args[2:]]
    return value


def _format_fields(text: str) -> ast.Constant:
    """The replacement fields `str.format` fills in the text (one no argument supplies
    raises KeyError where it is formatted, `import torch` for a docstring)."""
    try:
        fields = [
            (f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text) if f is not None
        ]
    except ValueError as exc:  # an unmatched brace: formatting raises
        return ast.Constant(f"<unformattable: {exc}>")
    return ast.Constant(repr(fields))


def _formatting(text: ast.expr) -> ast.expr | None:
    """What of a docstring's text runs: nothing of a literal; a `"...".format(...)`'s
    fields and arguments; an f-string's expressions; anything else as it is."""
    if isinstance(text, ast.Constant):
        return None
    if isinstance(text, ast.Call) and _formats_literal(text.func):
        literal = text.func.value.value  # type: ignore[attr-defined]
        fields = ast.Attribute(value=_format_fields(literal), attr="format", ctx=ast.Load())
        return ast.Call(func=fields, args=text.args, keywords=text.keywords)
    if isinstance(text, ast.JoinedStr):
        formatted = [v.value for v in text.values if isinstance(v, ast.FormattedValue)]
        return ast.Tuple(elts=formatted, ctx=ast.Load())
    if isinstance(text, ast.BinOp) and isinstance(text.op, ast.Add):  # r"A" + r"B".format()
        parts = [_formatting(text.left), _formatting(text.right)]
        return ast.Tuple(elts=[p or ast.Constant("<text>") for p in parts], ctx=ast.Load())
    return text


def _formats_literal(func: ast.expr) -> bool:
    """`"...".format`."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "format"
        and isinstance(func.value, ast.Constant)
        and isinstance(func.value.value, str)
    )


def _with_format_fields(body: list[ast.stmt]) -> list[ast.stmt]:
    """A body whose docstring is formatted by its module: the docstring's fields, not its
    words."""
    if _strip_docstring(body) is body:  # no docstring
        return body
    docstring = body[0].value.value  # type: ignore[attr-defined]
    return [ast.Expr(value=_format_fields(docstring)), *body[1:]]


# The modules whose `cast` and `overload` are typing's (`typing.cast(T, v)` returns `v`).
_TYPING_MODULES = {"typing", "typing_extensions"}


def _is_typing_cast(node: ast.Call) -> bool:
    """`typing.cast("T", value)`, its type named by a string: that is never evaluated, so
    the call is its value. A type given as an expression is evaluated (a name imported only
    under TYPE_CHECKING raises NameError there), and a bare `cast(...)` may be any function
    (torch/_inductor/bounds.py defines `cast(x, dtype)`; the import is not read here)."""
    if len(node.args) != 2 or node.keywords:
        return False
    first, func = node.args[0], node.func
    return (
        isinstance(first, ast.Constant)
        and isinstance(first.value, str)
        and isinstance(func, ast.Attribute)
        and func.attr == "cast"
        and isinstance(func.value, ast.Name)
        and func.value.id in _TYPING_MODULES
    )


@dataclass(frozen=True)
class TypingNames:
    """How a module spells `typing.overload`: the names it binds to it (`from typing import
    overload as _overload`) and the names of the typing modules it imports (`import typing`).
    `torch._jit_internal._overload` (torch/nn/functional.py's) is TorchScript's, not this:
    it checks the stubs' bodies on import and compiles callers against their signatures."""

    overload: frozenset[str] = frozenset()
    modules: frozenset[str] = frozenset()


def typing_names(tree: ast.Module) -> TypingNames:
    """The names the module binds, at run time, only to typing's `overload` or to a typing
    module: its top-level statements, `if`/`try` blocks included but not the body of
    `if TYPE_CHECKING:` (not run). A name any other statement binds too (another module's
    `overload`, `overload = torch.jit._overload`, a `def`) is not typing's."""
    bindings: dict[str, list[str]] = {}  # name -> what each binding of it is
    for stmt in _run_at_import(tree.body):
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                typing = stmt.module in _TYPING_MODULES and alias.name == "overload"
                bindings.setdefault(alias.asname or alias.name, []).append(
                    "overload" if typing else "other"
                )
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                typing = alias.name in _TYPING_MODULES
                name = alias.asname or alias.name.split(".", 1)[0]
                bindings.setdefault(name, []).append("module" if typing else "other")
        else:
            for name in _bound_names(stmt):
                bindings.setdefault(name, []).append("other")
    only = {name: set(kinds) for name, kinds in bindings.items() if len(set(kinds)) == 1}
    return TypingNames(
        frozenset(n for n, k in only.items() if k == {"overload"}),
        frozenset(n for n, k in only.items() if k == {"module"}),
    )


def _run_at_import(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, those of `if`/`try` blocks too, but not `if TYPE_CHECKING:`
    bodies."""
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from _run_at_import(stmt.body)
            yield from _run_at_import(stmt.orelse)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            yield from _run_at_import(stmt.body + stmt.orelse + stmt.finalbody)
            for handler in stmt.handlers:
                yield from _run_at_import(handler.body)
        else:
            yield stmt


def _is_type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING`."""
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return name == "TYPE_CHECKING"


def _is_overload_stub(node: ast.AST, names: TypingNames) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Name) and decorator.id in names.overload:
            return True
        if (
            isinstance(decorator, ast.Attribute)
            and decorator.attr == "overload"
            and isinstance(decorator.value, ast.Name)
            and decorator.value.id in names.modules
        ):
            return True
    return False


def runtime_definitions(nodes: list[ast.AST], names: TypingNames) -> list[ast.AST]:
    """The statements that make what a name is at run time: typing's `@overload` stubs are
    left out when a definition that is not one follows (that implementation rebinds the
    name over the dummy function `overload` returns; only `typing.get_overloads` reads the
    stubs). Without an
    implementation after them the last stub is what the name binds, so the stubs stay."""
    if not names.overload and not names.modules:
        return nodes
    last_implementation = max(
        (
            i
            for i, node in enumerate(nodes)
            if isinstance(node, FUNCTION_DEFS) and not _is_overload_stub(node, names)
        ),
        default=-1,
    )
    return [
        node
        for i, node in enumerate(nodes)
        if not (i < last_implementation and _is_overload_stub(node, names))
    ]


class _Valued(ast.AnnAssign):
    value: ast.expr  # an annotated assignment with a value (not a bare `x: T`)


@dataclass(frozen=True)
class _Reading:
    """Where `_feed` stands, for the annotations read at run time
    (selection.python.runtime_annotations): the module's readers, whether in a function, how
    much of this function's annotations is behaviour, and how this class or module body's
    field annotations are read."""

    readers: ModuleReaders = UNKNOWN
    in_function: bool = False
    reads: Reads = Reads.NONE
    text: bool = False  # the reader compares annotation text (a quoted type differs)
    fields: Fields = Fields.TYPES

    def entering(self, node: ast.AST) -> _Reading:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scripted = self.fields is Fields.SCRIPT and not self.in_function
            reads = function_reads(node, self.readers, scripted)
            return _Reading(self.readers, True, reads, reads_text(node))
        if isinstance(node, ast.Lambda):
            return _Reading(self.readers, True, self.reads, self.text)
        if isinstance(node, ast.ClassDef):
            return _Reading(self.readers, fields=class_fields(node, self.readers))
        return self

    def annotation(self, node: ast.AST, value: ast.expr | None) -> object:
        """What of an annotation the comparison sees (None: nothing)."""
        if value is None:
            return None
        read = self.reads is Reads.ALL or (
            self.reads is Reads.SIGNATURE and isinstance(node, (ast.arg, *FUNCTION_DEFS))
        )
        if read:
            return value if self.text else unquoted(value)
        if not isinstance(node, ast.AnnAssign) or self.in_function:
            return None  # annotations describe types, they do not run
        if self.fields is Fields.DATACLASS:
            return dataclass_words(value)
        if self.fields is Fields.CONFIG:
            return value  # checked as written
        return unquoted(value) if self.fields is Fields.SCRIPT else None


def _feed(node: object, out: list[str], reading: _Reading) -> None:
    """Serialize an AST like ast.dump (no positions), leaving out what does not change
    behaviour: docstrings, annotations but those read at run time (`_Reading`; an annotated
    assignment in a function is an assignment: `_is_plain`), the text given to
    `add_docstr`, `typing.cast` of a type named by a string (`_is_typing_cast`: it returns
    its value). Does not copy or mutate the tree."""
    if isinstance(node, list):
        out.append("[")
        for item in node:
            _feed(item, out, reading)
            out.append(",")
        out.append("]")
        return
    if not isinstance(node, ast.AST):
        out.append(repr(node))
        return
    if isinstance(node, ast.Call) and _is_typing_cast(node):
        _feed(node.args[1], out, reading)
        return
    if isinstance(node, ast.AnnAssign) and _is_plain(node, reading):
        node = ast.Assign(targets=[node.target], value=node.value, type_comment=None)
    outside, reading = reading, reading.entering(node)
    out.append(type(node).__name__)
    out.append("(")
    for name in node._fields:
        out.append(name)
        out.append("=")
        if name in _ANNOTATION_FIELDS and isinstance(node, _ANNOTATED):
            value = reading.annotation(node, getattr(node, name, None))
        else:
            value = _field_value(node, name, outside)
        _feed(value, out, reading)
        out.append(",")
    out.append(")")


def _is_plain(node: ast.AnnAssign, reading: _Reading) -> TypeGuard[_Valued]:
    """`x: T = v` that is `x = v` once its annotation is left out: in a function (where an
    annotation is never evaluated) that TorchScript does not compile (it types a local by
    its annotation), or to an attribute or an item anywhere. Not a name's in a class or
    module body (a dataclass or NamedTuple field is not a class attribute), nor a bare `x: T`
    (in a function it makes `x` local)."""
    if node.value is None or reading.reads is Reads.ALL:
        return False
    return reading.in_function or not isinstance(node.target, ast.Name)


def normalized_fingerprint(
    nodes: list[ast.AST], readers: ModuleReaders = UNKNOWN, enclosing: Fields | None = None
) -> str:
    """A digest of what the nodes do. The import statements of a run of them (no other
    statement between) are compared as a set -- their order within it is no behaviour the
    tests can see -- unless a name one binds is bound by another of the nodes too (which
    binding wins depends on the order) or it is a star import (it binds whatever the module
    lists, and can shadow or be shadowed by anything): those keep their place, as does
    every import against the code around it (an import moved past a statement may run
    before what it needs: a circular import). `readers`: what of their module reads
    annotations; `enclosing`: how a method's class reads them (by default the nodes are the
    module's statements)."""
    fields = module_fields(readers) if enclosing is None else enclosing
    reading = _Reading(readers, fields=fields)
    digest = hashlib.sha1()
    run: list[str] = []
    rebound = _names_bound_twice(nodes)
    for node in nodes:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a bare string statement (module docstring) is documentation
        out: list[str] = []
        _feed(node, out, reading)
        if _movable_import(node, rebound):
            run.append("".join(out))
            continue
        for text in sorted(run):
            digest.update(text.encode())
        run.clear()
        digest.update("".join(out).encode())
    for text in sorted(run):
        digest.update(text.encode())
    return digest.hexdigest()


def _movable_import(node: ast.AST, rebound: set[str]) -> bool:
    """An import whose place among the imports next to it does not matter."""
    if not isinstance(node, (ast.Import, ast.ImportFrom)):
        return False
    star = any(alias.name == "*" for alias in node.names)
    return not star and not rebound & _bound_names(node)


def _bound_names(node: ast.AST) -> set[str]:
    """The module-level names a statement binds (imports, assignments, defs, classes)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".", 1)[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.stmt):
        return set(_assign_targets(node))
    return set()


def _names_bound_twice(nodes: list[ast.AST]) -> set[str]:
    seen: set[str] = set()
    twice: set[str] = set()
    for node in nodes:
        names = _bound_names(node)
        twice |= seen & names
        seen |= names
    return twice


def referenced_names(node: ast.AST) -> frozenset[str]:
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            names.add(sub.attr)
    return frozenset(names)


@dataclass(eq=False)
class Symbol:
    qualname: str  # "func", "Class", "Class.method", "CONSTANT" or "<module>"
    kind: str  # function | class | method | assign | module
    text_hash: str  # hash of the exact source text: equal text means unchanged
    nodes: list[ast.AST]
    lineno: int
    # its statements less typing's `@overload` stubs (`runtime_definitions`); None: `nodes`
    runtime: list[ast.AST] | None = None
    # what of its module reads annotations at run time, and for a method whether its class
    # reads all of them (selection.python.runtime_annotations)
    readers: ModuleReaders = UNKNOWN
    enclosing: Fields | None = None
    # source text its module reads on import besides its code (a config module's comments)
    read_text: str = ""
    _cache: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def runtime_nodes(self) -> list[ast.AST]:
        """What the behaviour comparisons read: its statements less the `@overload` stubs an
        implementation replaces."""
        return self.nodes if self.runtime is None else self.runtime

    @property
    def definitions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Its `def` statements that run (typing's `@overload` stubs left out): every one's
        decorators ran, so each can register the function."""
        return [n for n in self.runtime_nodes if isinstance(n, FUNCTION_DEFS)]

    @property
    def implementation(self) -> ast.AST | None:
        """What the name is at run time: its last `def` (after stubs, TorchScript's
        included), else its first statement."""
        defs = self.definitions
        return defs[-1] if defs else (self.runtime_nodes[0] if self.runtime_nodes else None)

    def fingerprint(self, agnostic: bool = False, tests: bool = False) -> str:
        """`agnostic`: of the code that can run on our device (selection.python.for_us)."""
        key = f"agnostic-{tests}" if agnostic else "full"
        if key not in self._cache:
            nodes = self.runtime_nodes
            if agnostic:
                from selection.python.for_us import for_us

                nodes = for_us(nodes, tests)
            code = normalized_fingerprint(nodes, self.readers, self.enclosing)
            self._cache[key] = _hash_text(code, self.read_text) if self.read_text else code
        return str(self._cache[key])

    def fingerprinter(self) -> Fingerprint:
        """`normalized_fingerprint` for parts of this symbol's code, read where it stands
        (its module's and class's annotation readers), as the narrowing analyses need it:
        they must see every difference its own fingerprint sees."""
        return functools.partial(
            normalized_fingerprint, readers=self.readers, enclosing=self.enclosing
        )

    @property
    def refs(self) -> frozenset[str]:
        if "refs" not in self._cache:
            found: set[str] = set()
            for node in self.nodes:
                found |= referenced_names(node)
            self._cache["refs"] = frozenset(found)
        return self._cache["refs"]  # type: ignore[return-value]


def same_code(old: Symbol, new: Symbol) -> bool:
    return old.text_hash == new.text_hash or old.fingerprint() == new.fingerprint()


def same_code_for_us(old: Symbol, new: Symbol, tests: bool = False) -> bool:
    """Equal once another device's code is left out (`tests`: the code is test code, where
    `cpu`/`meta` branches are another device's too)."""
    return old.fingerprint(agnostic=True, tests=tests) == new.fingerprint(
        agnostic=True, tests=tests
    )


class _Source:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def segment(self, node: ast.AST) -> str:
        start = getattr(node, "lineno", 1) - 1
        end = getattr(node, "end_lineno", start + 1) or start + 1
        decorators = getattr(node, "decorator_list", None)
        if decorators:
            start = min(start, decorators[0].lineno - 1)
        return "\n".join(self.lines[start:end])


def _hash_text(*parts: str) -> str:
    return hashlib.sha1("\n\0".join(parts).encode()).hexdigest()


def _assign_targets(stmt: ast.stmt) -> list[str]:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)  # the statements that define a function
# What opens a scope of its own, and the comprehensions (whose `for` targets are their own).
SCOPES = (*FUNCTION_DEFS, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def own_nodes(nodes: Iterable[ast.AST], comprehensions: bool = True) -> Iterator[ast.AST]:
    """`nodes` and the nodes under them, not entering nested functions, lambdas or classes
    (those are yielded, their insides not), nor comprehensions unless `comprehensions`."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, SCOPES) and (
            comprehensions or not isinstance(node, COMPREHENSIONS)
        ):
            stack.extend(ast.iter_child_nodes(node))


def _with_stubs_left_out(symbol: Symbol, names: TypingNames) -> Symbol:
    runtime = runtime_definitions(symbol.nodes, names)
    if len(runtime) != len(symbol.nodes):
        symbol.runtime = runtime
    return symbol


def _class_symbols(
    node: ast.ClassDef, source: _Source, names: TypingNames, readers: ModuleReaders
) -> list[Symbol]:
    methods = [s for s in node.body if isinstance(s, FUNCTION_DEFS)]
    others = [s for s in node.body if s not in methods]
    header = copy.copy(node)
    header.body = others or [ast.Pass()]
    # The header is the decorators, the `class X(bases):` lines (however many) and the
    # body statements that are not methods.
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    body_start = (node.body[0].lineno - 1) if node.body else node.lineno
    head_text = "\n".join(source.lines[first : max(body_start, node.lineno)])
    header_hash = _hash_text(head_text, *(source.segment(s) for s in others))
    symbols = [Symbol(node.name, "class", header_hash, [header], node.lineno, readers=readers)]
    fields = class_fields(node, readers)  # a scripted class's methods: every annotation
    by_name: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for method in methods:  # a property's getter and setter share a name: one symbol
        by_name.setdefault(method.name, []).append(method)
    for name, defs in by_name.items():
        text_hash = _hash_text(*(source.segment(d) for d in defs))
        qualname, line = f"{node.name}.{name}", defs[0].lineno
        symbol = Symbol(
            qualname, "method", text_hash, list(defs), line, readers=readers, enclosing=fields
        )
        symbols.append(_with_stubs_left_out(symbol, names))
    return symbols


def module_symbols(tree: ast.Module, text: str) -> dict[str, Symbol]:
    """Every top-level function, class, method and assigned name of a parsed module.

    Statements that define nothing (imports, `if` blocks, calls) form `<module>`; a name
    defined or assigned several times (`op_db += ...`, a property's getter and setter) is one
    symbol over all its statements.
    """
    source = _Source(text)
    typing = typing_names(tree)
    readers = ModuleReaders.of(tree, text)
    symbols: dict[str, Symbol] = {}
    grouped: dict[str, list[ast.stmt]] = {}
    rest: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, FUNCTION_DEFS):
            grouped.setdefault(stmt.name, []).append(stmt)
        elif isinstance(stmt, ast.ClassDef):
            for sym in _class_symbols(stmt, source, typing, readers):
                symbols[sym.qualname] = sym
        elif names := _assign_targets(stmt):
            for name in names:
                grouped.setdefault(name, []).append(stmt)
        else:
            rest.append(stmt)
    # A name defined several times is one symbol over all its statements (`def f` then
    # `f = wrap(f)`, `@overload` stubs and the implementation): each of them can change it
    # (stubs only where no implementation follows: `runtime_definitions`).
    for name, stmts in grouped.items():
        if name in symbols:  # also a class: the class keeps the name, the rest is module code
            rest.extend(stmts)
            continue
        text_hash = _hash_text(*(source.segment(s) for s in stmts))
        # the first statement's kind: `def f` then `f = wrap(f)` is a function
        kind = "function" if isinstance(stmts[0], FUNCTION_DEFS) else "assign"
        symbol = Symbol(name, kind, text_hash, list(stmts), stmts[0].lineno, readers=readers)
        symbols[name] = _with_stubs_left_out(symbol, typing)
    # a config module reads its own comments on import (`# [@compile_ignored: debug]`
    # right above an option): what they mark is its module-level code's
    comments = _compile_ignored(text) if readers.config else ""
    text_hash = _hash_text(*(source.segment(s) for s in rest), comments)
    symbols[MODULE_SYMBOL] = Symbol(
        MODULE_SYMBOL, "module", text_hash, list(rest), 1, readers=readers, read_text=comments
    )
    return symbols


_MARKER = "@compile_ignored"
_OPTION = re.compile(r"\s*(\w+)\s*(?::[^=]*)?=")


def _compile_ignored(text: str) -> str:
    """What `install_config_module` reads of a config module's comments: the options a
    `# [@compile_ignored: ...]` marks (the line right below it), and each marker no option
    follows (the import then fails)."""
    if _MARKER not in text:
        return ""
    lines = text.splitlines()
    found: list[str] = []
    for number, line in enumerate(lines):
        if line.lstrip().startswith("#") and _MARKER in line:
            below = _OPTION.match(lines[number + 1]) if number + 1 < len(lines) else None
            found.append(below.group(1) if below else f"unconsumed at line {number + 1}")
    return repr(sorted(found))
