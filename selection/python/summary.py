"""One module as the selection needs it: symbols, import bindings and each symbol's uses. Pure.

A *use* is a dotted chain a symbol's code names in a way that runs it: a call
(`F.gelu(x)`), a decorator, an argument (`sample_inputs_func=sample_inputs_foo`), a base
class, or a plain reference (`fn = _refs.add`). Uses are collected from the code that can
run on our device (selection.python.for_us): a helper reached only through another
device's path reaches nothing here. The classes an `isinstance`/`issubclass` test or a comparison
(`typ in (bool, SymBool)`) compares with, those a type spec names (`IntLike = (int,
torch.SymInt)`, `int | torch.SymInt`), and annotations, are not uses: none of their code runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from selection.links.registrations import (
    Pending,
    Registration,
    inferring_factories,
    is_registration_module,
    namespace_aliases,
    pending_factory_calls,
    registrations_in,
)
from selection.pyast import COMPREHENSIONS, FUNCTION_DEFS, MODULE_SYMBOL, Symbol, module_symbols
from selection.python import operators
from selection.python.argument_classes import (
    CallShape,
    Signature,
    call_shape,
    callable_names,
    module_bindings,
    passed_on,
    plain_decorators,
    signature_of,
    text_positions,
)
from selection.python.chains import Chain, aten_in_chain, chain_of, last_name
from selection.python.for_us import for_us, has_other_device_code
from selection.python.load_time import calls_on_load, imported_modules, load_time_nodes
from selection.python.names import ModuleNames
from selection.python.nesting import CONSTRUCTORS, call_arguments, is_plain_call, runs_in_place
from selection.python.operators import Mappings, Operators
from selection.python.receivers import VALUE_MODULES, is_plain_literal, scope_names

# Builtins comparing an object's type with classes they are given: no code of theirs runs.
_CLASS_TESTS = {("isinstance",), ("issubclass",)}
# Builtins that only read what they are given (a class passed to them is not constructed).
_TYPE_CHECKS = {
    (name,)
    for name in ("isinstance", "issubclass", "type", "getattr", "hasattr", "setattr", "vars", "id")
}


# The head of a use's chain whose receiver is no name (`x.sum().backward()`).
UNNAMED = "<expr>"
# The head of a method call's chain whose receiver is a local name that never holds a
# tensor (selection.python.receivers: `seen.add(x)`, `name.split(".")` with `name: str`):
# no use of the tensor method or op of that name.
PLAIN_VALUE = "<plain value>"


@dataclass(frozen=True)
class Use:
    chain: Chain  # ("torch", "nn", "functional", "gelu"), ("self", "helper"), ("aten", "add", "Tensor")
    how: str  # call | decorator | argument | base | reference | compared
    line: int
    # How many function or lambda bodies inside the symbol's own the use sits in: 0 runs
    # when the symbol runs; 1 only when a function it defines is called (the decorator a
    # factory returns), ... (selection.links.startup follows only what runs on import).
    nesting: int = 0
    # A call whose result is called in turn, where it stands: `@factory(arg)` on a
    # definition, `out_wrapper()(fn)`. The function the factory returns runs there too.
    applied: bool = False
    # A call's: what it passes, by class of value (selection.python.argument_classes): a
    # change that matters only for some values is no change for a call passing others.
    # None: not known (not a call, or a call made by other code: `partial(f, ...)`).
    arguments: CallShape | None = None

    @property
    def text_arguments(self) -> tuple[int, ...]:
        """A call's positional arguments that are text: `x.split(",")` is no call of an op
        none of whose overloads takes text there (links.text_arguments)."""
        return text_positions(self.arguments or ())


@dataclass(frozen=True)
class Binding:
    """A name bound by an import: a module (`import torch.nn.functional as F`) or a name in
    one (`from torch._prims_common import check`)."""

    module: str
    name: str | None = None


@dataclass
class ModuleSummary:
    """What the link graph needs of a module; no AST, so it can be cached (it is pickled
    per blob by the analysis cache)."""

    path: str
    kinds: dict[str, str]  # qualname -> function | class | method | assign | module
    bindings: dict[str, Binding] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    exports: tuple[str, ...] | None = None  # a literal __all__
    bases: dict[str, tuple[Chain, ...]] = field(default_factory=dict)
    uses: dict[str, tuple[Use, ...]] = field(default_factory=dict)
    # uses only in code that runs on another device (`_fused_cuda_silu(x)` under
    # `if x.device.type == "cuda":`): never followed, they tell a helper reached only that
    # way ("no effect here") from one nothing reaches (a blind spot)
    device_uses: dict[str, tuple[Use, ...]] = field(default_factory=dict)
    aten_aliases: set[str] = field(default_factory=set)  # `aten = torch.ops.aten`
    registrations: list[Registration] = field(default_factory=list)
    # registering decorator factories this module defines, and decorators that may be one
    # defined elsewhere: (function, decorator chain, text, line), resolved by the explorer
    inferring_factories: set[str] = field(default_factory=set)
    pending_registrations: list[Pending] = field(default_factory=list)
    # what importing the module runs (selection.python.load_time): the modules it imports,
    # and the calls and decorators of its load-time code
    load_imports: tuple[str, ...] = ()
    load_uses: tuple[Use, ...] = ()
    # assignments and classes whose load-time code calls something
    calls_on_load: frozenset[str] = frozenset()
    # methods read as attributes, not called (`@property`, `@cached_property`, setters)
    accessors: frozenset[str] = frozenset()
    # for TorchRefsMode's links (selection.python.operators): per qualname, the names its
    # operators reach the mode under (references, registered kernels), its dict literals'
    # name-to-name entries (the mode's module)
    operators: dict[str, Operators] = field(default_factory=dict)
    mappings: dict[str, Mappings] = field(default_factory=dict)
    # functions' and methods' parameters (one definition each), for what a call passes them
    signatures: dict[str, Signature] = field(default_factory=dict)


def summarize(
    path: str, tree: ast.Module, text: str, names: ModuleNames, tests: bool = False
) -> ModuleSummary:
    """`tests`: the module is test code (test/ or the testing infrastructure), where `cpu`
    and `meta` restrictions are another device's too (see selection.devices)."""
    symbols = module_symbols(tree, text)
    summary = ModuleSummary(path, {q: s.kind for q, s in symbols.items()})
    _imports(summary, tree, names)
    # a `sum` of its own; a `list` the receivers must not take for the builtin
    defined = frozenset({q for q in symbols if "." not in q} | summary.bindings.keys())
    value_modules = value_module_names(summary.bindings)
    # a top-level function bound once (no other binding anywhere at the top level, no
    # `global` rebinding it) is that function wherever the module's code reads its name
    bindings = module_bindings(tree.body)
    functions = frozenset(
        q for q, s in symbols.items() if s.kind == "function" and "." not in q and bindings[q] == 1
    )
    for qualname, symbol in symbols.items():
        collector = _UseCollector(tests, defined, value_modules, functions)
        for node in symbol.nodes:
            collector.collect(node)
        summary.uses[qualname] = tuple(collector.uses)
        if collector.device_uses:
            summary.device_uses[qualname] = tuple(collector.device_uses)
        if operators.keeps_operators(path) and symbol.kind in ("function", "method"):
            summary.operators[qualname] = operators.operators_in(symbol.nodes, defined)
        if operators.keeps_mappings(path) and symbol.kind in ("function", "method"):
            summary.mappings[qualname] = operators.mappings_in(symbol.nodes)
        if qualname in functions and plain_decorators(symbol.definitions[0]):
            # what a call passes is what its body gets (no wrapper in between)
            summary.signatures[qualname] = signature_of(symbol.definitions[0])
        if symbol.kind == "class":
            summary.bases[qualname] = tuple(
                c for b in getattr(symbol.nodes[0], "bases", []) if (c := chain_of(b))
            )
    summary.load_imports = imported_modules(
        tree, lambda module, level: names.absolute(path, module, level)
    )
    summary.load_uses = _load_uses(tree, tests, defined)
    summary.accessors = frozenset(q for q, symbol in symbols.items() if is_accessor(symbol))
    summary.calls_on_load = frozenset(
        q
        for q, symbol in symbols.items()
        if symbol.kind in ("assign", "class") and calls_on_load(symbol.nodes)
    )
    if is_registration_module(path):
        summary.registrations = registrations_in(path, symbols, summary.aten_aliases)
        _drop_registered_ops(summary, symbols)
        summary.inferring_factories = inferring_factories(symbols, summary.aten_aliases)
        summary.pending_registrations = pending_factory_calls(path, symbols, summary.aten_aliases)
    return summary


# Decorators that make a method something other than a call by name (`x.real` is read).
ACCESSOR_DECORATORS = frozenset({"property", "cached_property", "setter", "getter", "deleter"})


def is_accessor(symbol: Symbol) -> bool:
    """A method some definition of which is a property, a cached property or an accessor."""
    return symbol.kind == "method" and any(
        last_name(x) in ACCESSOR_DECORATORS for d in symbol.definitions for x in d.decorator_list
    )


def _drop_registered_ops(summary: ModuleSummary, symbols: dict[str, Symbol]) -> None:
    """A registering decorator's argument names the op the function is registered for, not
    an op it runs: `@register_op_impl(aten.slice_scatter.default)` on a FakeTensor kernel
    it shares with `copy` is no use of slice_scatter (read as one, every traced `copy`
    reached a change to slice_scatter). The registration edge, op -> function, says it."""
    registered: dict[str, set[str]] = {}
    for op, function, _how, _line in summary.registrations:
        registered.setdefault(function, set()).add(op.split(".", 1)[0])
    for qualname, ops in registered.items():
        symbol = symbols.get(qualname)
        defs = symbol.definitions if symbol is not None else []
        spans = [(d.lineno, d.end_lineno or d.lineno) for n in defs for d in n.decorator_list]
        summary.uses[qualname] = tuple(
            use
            for use in summary.uses.get(qualname, ())
            if not (
                use.how == "argument"
                and any(first <= use.line <= last for first, last in spans)
                and (aten_in_chain(use.chain, summary.aten_aliases) or "").split(".", 1)[0] in ops
            )
        )


def _load_uses(tree: ast.Module, tests: bool, module_names: frozenset[str]) -> tuple[Use, ...]:
    """The calls and decorators of the code that runs when the module is imported."""
    collector = _UseCollector(tests, module_names)
    for node, how in load_time_nodes(tree):
        collector.collect(node, how)
    return tuple(u for u in dict.fromkeys(collector.uses) if u.how in _RUN_ON_LOAD)


_RUN_ON_LOAD = ("call", "decorator")


def uses_in(node: ast.AST, tests: bool, how: str = "reference") -> tuple[Use, ...]:
    """The uses of one expression or statement (e.g. an OpInfo constructor call's
    argument); `how`: how the node itself is used where it stands ("argument" for a call's
    argument, so that a class passed there counts as passed)."""
    collector = _UseCollector(tests)
    collector.collect(node, how)
    return tuple(collector.uses)


def _imports(summary: ModuleSummary, tree: ast.Module, names: ModuleNames) -> None:
    """Every import in the module, wherever it is (torch imports lazily inside functions):
    a superset of what each scope sees, which only over-approximates uses."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    summary.bindings[alias.asname] = Binding(alias.name)
                else:  # `import torch.nn.functional` binds `torch`
                    top = alias.name.split(".", 1)[0]
                    summary.bindings.setdefault(top, Binding(top))
        elif isinstance(node, ast.ImportFrom):
            module = names.absolute(summary.path, node.module, node.level)
            for alias in node.names:
                if alias.name == "*":
                    summary.star_imports.append(module)
                else:
                    summary.bindings[alias.asname or alias.name] = Binding(module, alias.name)
        elif _is_all_assignment(node):
            summary.exports = _literal_strings(node.value)  # type: ignore[attr-defined]
    summary.aten_aliases = namespace_aliases(tree)


def _is_all_assignment(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == "__all__"
    )


def exports_edit(old: list[ast.AST], new: list[ast.AST]) -> tuple[str, ...] | None:
    """The names an `__all__` gains ("+mul") or loses ("-mul"), sorted by name; None when a
    revision does not list them in one literal assignment."""
    lists = [_listed(nodes) for nodes in (old, new)]
    if lists[0] is None or lists[1] is None:
        return None
    before, after = set(lists[0]), set(lists[1])
    signed = [f"-{n}" for n in before - after] + [f"+{n}" for n in after - before]
    return tuple(sorted(signed, key=lambda name: (name[1:], name)))


def _listed(nodes: list[ast.AST]) -> tuple[str, ...] | None:
    if len(nodes) != 1 or not _is_all_assignment(nodes[0]):
        return None
    return _literal_strings(nodes[0].value)  # type: ignore[attr-defined]


def _literal_strings(node: ast.expr) -> tuple[str, ...] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return tuple(e.value for e in node.elts)  # type: ignore[attr-defined]
    return None


class _UseCollector:
    """Walks the code of one symbol that can run here (selection.python.for_us), collecting
    uses; only symbols with another device's code are copied and filtered."""

    def __init__(
        self,
        tests: bool,
        module_names: frozenset[str] = frozenset(),
        value_modules: frozenset[str] = frozenset(),
        module_functions: frozenset[str] = frozenset(),
    ) -> None:
        self.tests = tests
        self.module_functions = module_functions  # the module's top-level functions
        self.module_names = module_names  # what the module defines or imports
        self.value_modules = value_modules  # receivers.VALUE_MODULES it imports, by name
        self.uses: list[Use] = []
        self.device_uses: list[Use] = []
        self._nesting = 0  # inside how many nested function bodies (Use.nesting)
        self._in_place: list[frozenset[str]] = []  # per body entered: runs_in_place
        self._plain: list[frozenset[str]] = []  # per body entered: its plain-value names
        self._bound: list[frozenset[str]] = []  # per function entered: the names it binds
        # per function entered: its local names, and those it declares `global`
        self._local: list[tuple[frozenset[str], frozenset[str]]] = []
        self._at_root = False  # the symbol's own def comes next: its body is nesting 0
        self._passing: frozenset[str] = frozenset()  # the symbol's parameters passed on
        self._callables: frozenset[str] = frozenset()  # names holding a function there

    def collect(self, node: ast.AST, how: str = "reference") -> None:
        # decorators kept: a wrapper named for another device still runs on ours
        if not has_other_device_code(node, self.tests, decorators=False):
            self._start(node)
            self._visit(node, how)
            return
        kept = len(self.uses)
        for item in for_us([node], self.tests, decorators=False):
            self._start(item)
            self._visit(item, how)
        for guard, nesting in _guards(node):
            self._nesting = nesting
            self._visit(guard, "reference")  # `if can_fuse(x) and x.is_cuda:` runs here
        ours = {(u.chain, u.how, u.line) for u in self.uses[kept:]}
        everything = _UseCollector(
            self.tests, self.module_names, self.value_modules, self.module_functions
        )
        everything._start(node)
        everything._visit(node, how)
        self.device_uses.extend(u for u in everything.uses if (u.chain, u.how, u.line) not in ours)

    def _start(self, node: ast.AST) -> None:
        """Before the symbol's code: a def's body is its own code (nesting 0); the
        statements of module-level code are, and run in place what they define."""
        self._nesting = 0
        self._at_root = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        if isinstance(node, FUNCTION_DEFS):
            self._passing = passed_on(node)
            self._callables = callable_names(node, self.module_functions)
        else:
            self._passing = self._callables = frozenset()
        self._in_place = [] if self._at_root else [runs_in_place([node])]
        self._plain = []
        self._bound = []
        self._local = []

    def _use(
        self,
        chain: Chain,
        how: str,
        line: int,
        applied: bool = False,
        shape: CallShape | None = None,
    ) -> None:
        self.uses.append(Use(chain, how, line, self._nesting, applied, shape))

    def _visit(
        self, node: ast.AST, how: str, applied: bool = False, shape: CallShape | None = None
    ) -> None:
        """`applied`: what `node` (a call, or what a call calls) returns is called there;
        `shape`: what the call passes (Use.arguments)."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._definition(node)
            return
        if isinstance(node, ast.Lambda):
            self._nested(node.args, [node.body], deeper=True)
            return
        if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(
            getattr(node, "ctx", None), ast.Load
        ):
            chain = chain_of(node)
            if chain and len(chain) == 1 and self._is_local(chain[0]):
                return  # `check = x > 1; if check:` reads a local, not the module's `check`
            if chain:
                if (
                    how == "call"
                    and len(chain) == 2
                    and self._plain
                    and chain[0] in self._plain[-1]
                ):
                    chain = (PLAIN_VALUE, chain[1])
                self._use(chain, how, getattr(node, "lineno", 0), applied, shape)
                return
            if how == "call" and isinstance(node, ast.Attribute):
                # `x.sum().backward()`, `super().norm()`, `xs[0].split(2)`: a method called
                # on a receiver that is no name, linked by its name alone (calls.uses_of);
                # `str(layout).split(".")`, `"a b".split()`: on a value that is no tensor
                head = PLAIN_VALUE if is_plain_literal(node.value) else UNNAMED
                self._use((head, node.attr), how, node.lineno, applied, shape)
        if isinstance(node, ast.Call):
            # `@factory(arg)` on a definition: what the call returns is applied there;
            # `factory(arg)(fn)`: what the inner call returns is called by the outer one
            result_called = applied or how == "decorator"
            inner = isinstance(node.func, ast.Call)
            shape = call_shape(node, self._passing, self._callables)
            self._visit(node.func, "call", True if inner else result_called, shape)
            # a lambda given to a plain call is a callback: it may run in place
            callbacks = [a for a in call_arguments(node) if isinstance(a, ast.Lambda)]
            callbacks = callbacks if is_plain_call(node) else []
            for callback in callbacks:
                self._nested(callback.args, [callback.body], deeper=False)
            func = chain_of(node.func)
            if func in _CLASS_TESTS and len(node.args) == 2:
                # isinstance(x, (bool, SymBool)) compares types: no code of SymBool runs
                self._visit(node.args[0], "reference")
                classes = node.args[1]
                for item in classes.elts if isinstance(classes, ast.Tuple) else [classes]:
                    # compared: uses_of drops a class, keeps a tuple (`IntLike`) and calls
                    self._visit(item, "compared")
                return
            # getattr(x, "f") only reads x: not a construction of it
            passed_on = how == "argument"  # this call's value is another call's argument
            how = "reference" if func in _TYPE_CHECKS else "argument"
            arguments = [a for a in call_arguments(node) if a not in callbacks]
            partial = func and func[-1] == "partial" and node.args and not passed_on
            if partial and node.args[0] in arguments:
                # `partial(type_casts, ...)`: whoever calls the partial calls it (taken as
                # called here: `pw_cast_for_opmath = partial(...)`, then `@pw_cast_...`;
                # one passed on, `meta=partial(...)`, is stored like any function passed)
                arguments.remove(node.args[0])
                self._visit(node.args[0], "call")
            for arg in arguments:
                self._visit(arg, how)
            return
        if isinstance(node, ast.AnnAssign):
            # `x: list[int | torch.SymInt] = ...`: the annotation is never run
            for part in (node.target, node.value):
                if part is not None:
                    self._visit(part, "reference")
            return
        elements = _type_spec(node)
        if elements is not None:
            # `IntLike = (int, torch.SymInt)`, `int | torch.SymInt`: a type spec names the
            # classes that isinstance tests and annotations compare with; none of their
            # code runs (a function among them is still kept by uses_of)
            for item in elements:
                self._visit(item, "compared")
            return
        if isinstance(node, ast.Compare):
            # `typ in (bool, torch.SymBool)`: a class compared as a value runs none of its
            # code (uses_of drops such uses of classes; a compared list is still read)
            for operand in (node.left, *node.comparators):
                items = operand.elts if isinstance(operand, (ast.Tuple, ast.List)) else [operand]
                for item in items:
                    self._visit(item, "compared")
            return
        if isinstance(node, COMPREHENSIONS) and self._plain:
            # `[name.abs() for name in tensors]`: its `for` targets are its own names
            own = {
                n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
            }
            self._plain.append(self._plain[-1] - own)
            for child in ast.iter_child_nodes(node):
                self._visit(child, "reference")
            self._plain.pop()
            return
        for child in ast.iter_child_nodes(node):
            self._visit(child, "reference")

    def _is_local(self, name: str) -> bool:
        """A name of the module's that the innermost function around the code binding it
        binds as its own (not one declaring it `global` on the way out)."""
        if name not in self.module_names:
            return False
        for local, declared_global in reversed(self._local):
            if name in declared_global:
                return False
            if name in local:
                return True
        return False

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        root, self._at_root = self._at_root, False
        for deco in node.decorator_list:
            self._visit(deco, "decorator")
        in_place = root or (bool(self._in_place) and node.name in self._in_place[-1])
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                self._visit(base, "base")
            # a class body runs where the class is defined; its methods when called, but
            # the constructor of a class the code around constructs runs in place
            self._in_place.append(CONSTRUCTORS if in_place and not root else frozenset())
            self._plain.append(frozenset())  # a class body's names are its own
            for stmt in node.body:
                self._visit(stmt, "reference")
            self._plain.pop()
            self._in_place.pop()
            return
        self._nested(node.args, node.body, deeper=not in_place)

    def _nested(
        self, args: ast.arguments, body: list[ast.stmt] | list[ast.expr], deeper: bool
    ) -> None:
        """A function's or lambda's defaults (run where it is defined) and body: one level
        deeper (run when it is called), unless the code around runs it in place
        (selection.python.nesting)."""
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self._visit(default, "argument")
        step = 1 if deeper else 0
        self._nesting += step
        self._in_place.append(runs_in_place(body))
        # a module's `re` that an enclosing function rebinds is no module there
        enclosing = frozenset().union(*self._bound)
        modules = self.value_modules - enclosing
        scope = scope_names(args, body, self.module_names, modules)
        self._plain.append(scope.plain)
        self._bound.append(scope.bound)
        self._local.append((scope.local, scope.declared_global))
        for stmt in body:
            self._visit(stmt, "reference")
        self._local.pop()
        self._bound.pop()
        self._plain.pop()
        self._in_place.pop()
        self._nesting -= step


# Builtin types: a tuple or union naming one of them beside classes is a type spec.
_BUILTIN_TYPES = frozenset({"int", "float", "bool", "complex", "str", "bytes", "type", "object"})


def _type_spec(node: ast.AST) -> list[ast.expr] | None:
    """The classes of a type spec -- a tuple, list or set, or a `|` union, of plain names
    (`torch.SymInt`) and `None`, at least one of them a builtin type -- else None. Such a
    value is what isinstance compares with or an annotation names, never called through."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = list(node.elts)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        items = _union_members(node)
    else:
        return None
    if not items or not all(_is_type_name(i) for i in items):
        return None
    if not any(isinstance(i, ast.Name) and i.id in _BUILTIN_TYPES for i in items):
        return None
    return [i for i in items if not (isinstance(i, ast.Constant) and i.value is None)]


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(node.left), *_union_members(node.right)]
    return [node]


def _is_type_name(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None
    return isinstance(node, (ast.Name, ast.Attribute)) and bool(chain_of(node))


def _guards(node: ast.AST) -> list[tuple[ast.expr, int]]:
    """The conditions for_us may drop along with the code they guard: the tests of `if`s and
    conditional expressions, and the values of assignments (a name later used as a guard),
    each with its nesting (Use.nesting). They are evaluated on every device, so what they
    call is a use here."""
    found: list[tuple[ast.expr, int]] = []

    def visit(sub: ast.AST, nesting: int, in_place: frozenset[str], callback: bool = False) -> None:
        """`callback`: a lambda given to a plain call, which may run in place (as the
        collector reads it)."""
        if isinstance(sub, (ast.If, ast.IfExp)):
            found.append((sub.test, nesting))
        elif isinstance(sub, ast.Assign):
            found.append((sub.value, nesting))
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            body = sub.body if isinstance(sub.body, list) else [sub.body]
            named = getattr(sub, "name", None)
            deeper = 0 if sub is node or callback or named in in_place else 1
            for child in ast.iter_child_nodes(sub):
                inside = child in body
                visit(child, nesting + deeper if inside else nesting, runs_in_place(body))
            return
        arguments = call_arguments(sub) if isinstance(sub, ast.Call) and is_plain_call(sub) else []
        for child in ast.iter_child_nodes(sub):
            visit(child, nesting, in_place, any(child is a for a in arguments))

    visit(node, 0, runs_in_place([node]))
    return found


def value_module_names(bindings: dict[str, Binding]) -> frozenset[str]:
    """The names a module binds to an import of a `VALUE_MODULES` module (`import re`,
    `import os.path as osp`)."""
    return frozenset(
        name
        for name, binding in bindings.items()
        if binding.name is None and binding.module.split(".", 1)[0] in VALUE_MODULES
    )


def unknown_receiver(chain: Chain, summary: ModuleSummary) -> bool:
    """A method call's receiver whose type is not known (`x.softmax(...)`, `x.sum().add(y)`):
    the head of its chain names nothing the module defines or imports, and is no plain
    value (selection.python.receivers). Such a call is linked by the method's name alone."""
    head = chain[0]
    return head != PLAIN_VALUE and head not in summary.kinds and head not in summary.bindings


def is_test_code(path: str) -> bool:
    return path.startswith(("test/", "torch/testing/"))


MODULE = MODULE_SYMBOL
