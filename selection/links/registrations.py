"""Link kind `registration`: Python implementations registered for ATen ops. Pure.

Decompositions, meta/fake kernels and Python dispatcher kernels are tied to the ATen ops
(and overloads) they implement by registration, in the forms upstream uses:
- a decorator whose arguments name ATen ops: `@register_decomposition(aten.gelu_backward)`,
  `@register_meta([aten.take.default, aten.take.out])`, `@_make_elementwise_unary_reference(
  ..., aten_op=aten.abs)`;
- a decorator factory with an `aten_op` parameter left to its default other than None (the
  op is inferred from the function's name, as `_make_elementwise_unary_reference` does),
  unless told not to register (`should_register_decomposition=False`);
- a factory that registers what it builds under an op it computes from a name
  (`register_decomposition(getattr(aten, f"{fn.__name__}_copy"))(_fn)`), called at module
  level: `alias_copy = _make_copy_from_view(aten.alias)`, `abs_ = _make_inplace(abs)`;
  upstream names what it builds after that op;
- `@aten.dropout.default.py_impl(DispatchKey.Autograd)`;
- module-level calls naming ops and functions: `register_inplace(aten.addbmm_, addbmm)`,
  `register_decomposition(aten.x)(fn)`, loops `for op in [aten.a, aten.b]: register_meta(op)(fn)`;
- table entries: `decomposition_table[aten.x] = fn`.
Registrations are read when a module is summarized (selection.python.summary); the link
graph then has an edge from each ATen op to the functions registered for it.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator

from selection.pyast import MODULE_SYMBOL, Symbol
from selection.python.chains import aten_in_chain, chain_of

KIND = "registration"
# Where upstream registers Python implementations of ATen ops: library code, and the
# FakeTensor implementations (`@register_op_impl(aten.repeat_interleave.Tensor)`), read alone
# of their subsystem (torch/_subclasses, otherwise one node).
REGISTRATION_PREFIXES = (
    "torch/_decomp/",
    "torch/_refs/",
    "torch/_prims/",
    "torch/_prims_common/",
    "torch/_meta_registrations.py",
    "torch/_subclasses/fake_impls.py",
)

Registration = tuple[str, str, str, int]  # (aten op, function, how, line)


def namespace_aliases(tree: ast.Module) -> set[str]:
    """Names a module binds to the ATen op namespace: `aten = torch.ops.aten` (or
    `torch._ops.ops.aten`), `from torch.ops import aten`."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and chain_of(node.value)[-2:] == ("ops", "aten")
        ):
            found.add(node.targets[0].id)
        elif isinstance(node, ast.ImportFrom) and node.module in ("torch.ops", "torch._ops.ops"):
            found.update(a.asname or a.name for a in node.names if a.name == "aten")
    return found


def is_registration_module(path: str) -> bool:
    return path.endswith(".py") and path.startswith(REGISTRATION_PREFIXES)


def _aten_ops(node: ast.AST, aliases: Collection[str]) -> list[str]:
    """ATen ops named anywhere in an expression (`aten.x.overload`, `torch.ops.aten.x`,
    lists of them), outermost chains only."""
    found: list[str] = []
    inner: set[int] = set()
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Attribute) or id(sub) in inner:
            continue
        value = sub.value
        while isinstance(value, ast.Attribute):
            inner.add(id(value))
            value = value.value
        name = aten_in_chain(chain_of(sub), set(aliases))
        if name and name not in found:
            found.append(name)
    return found


def inferring_factories(symbols: dict[str, Symbol], aliases: Collection[str]) -> set[str]:
    """Factories that register what they build under an op named like it: decorator
    factories with an `aten_op` parameter defaulting to something other than None (left
    unset, the op is inferred from the decorated function's name), and factories that
    register under an op they compute (`_make_inplace`: `abs_ = _make_inplace(abs)`)."""
    found: set[str] = set()
    for qualname, symbol in symbols.items():
        node = symbol.implementation
        if not isinstance(node, ast.FunctionDef):
            continue
        args = node.args
        defaults = dict(zip([a.arg for a in args.kwonlyargs], args.kw_defaults, strict=True))
        positional = args.posonlyargs + args.args
        defaults.update(
            zip(
                [a.arg for a in positional[len(positional) - len(args.defaults) :]],
                args.defaults,
                strict=True,
            )
        )
        default = defaults.get("aten_op")
        unset = default is None or (isinstance(default, ast.Constant) and default.value is None)
        if not unset or _registers_computed_op(node, aliases):
            found.add(qualname)
    return found


# The registering calls a factory may make with an op it computes.
REGISTERING_CALLS = frozenset({"register_decomposition", "register_meta", "register_op_impl"})


def _registers_computed_op(function: ast.FunctionDef, aliases: Collection[str]) -> bool:
    """Does the function's body register what it builds under an op it computes from a
    name (`register_decomposition(getattr(aten, f"{fn.__name__}_copy"))(_fn)` in
    `_make_copy_from_view`, `_make_inplace`, `_register_inplace_meta`)? Upstream names what
    such a factory builds after that op (`alias_copy = _make_copy_from_view(aten.alias)`),
    as `get_aten_op` does. Not a function registered itself (its decorators), nor a factory
    registering the op it is given (`register_meta(func)`)."""
    for stmt in function.body:
        for sub in ast.walk(stmt):
            if not isinstance(sub, ast.Call) or not sub.args:
                continue
            chain = chain_of(sub.func)
            if chain and chain[-1] in REGISTERING_CALLS and _op_by_name(sub.args[0], aliases):
                return True
    return False


def _op_by_name(node: ast.expr, aliases: Collection[str]) -> bool:
    """`getattr(aten, name)` with a name computed at run time."""
    if not isinstance(node, ast.Call) or chain_of(node.func) != ("getattr",) or len(node.args) < 2:
        return False
    namespace = chain_of(node.args[0])
    named = namespace[-2:] == ("ops", "aten") or (len(namespace) == 1 and namespace[0] in aliases)
    return named and not isinstance(node.args[1], ast.Constant)


def _opts_out(deco: ast.Call) -> bool:
    """`should_register_decomposition=False`: the factory is told not to register."""
    return any(
        k.arg
        and "register" in k.arg
        and isinstance(k.value, ast.Constant)
        and k.value.value in (False, None)
        for k in deco.keywords
    )


def inferred_op(path: str, function: str) -> str:
    """The op a registering factory infers for `function` of module `path`, as upstream's
    `get_aten_op` does: its name, prefixed with the module's path below `torch/_refs`
    (`torch/_refs/special/__init__.py::i0e` -> `special_i0e`)."""
    below = path.removesuffix(".py").removesuffix("/__init__")
    if not below.startswith("torch/_refs"):
        return function
    parts = below.removeprefix("torch/_refs").strip("/").split("/")
    prefix = "_".join(p for p in parts if p)
    return f"{prefix}_{function}" if prefix else function


def _decorator_ops(
    deco: ast.expr, function: str, aliases: Collection[str], factories: set[str], path: str = ""
) -> list[tuple[str, str]]:
    """(aten op, how) registered by one decorator of `function`."""
    text = ast.unparse(deco)
    func = deco.func if isinstance(deco, ast.Call) else deco
    chain = chain_of(func)
    if chain and chain[-1] == "py_impl":
        return [(op, f"@{text}") for op in _aten_ops(func, aliases)]
    if not isinstance(deco, ast.Call):
        return []
    ops = _aten_ops(deco, aliases)
    if ops:
        return [(op, f"@{text}") for op in ops]
    if chain and chain[-1] in factories and infers(deco):
        return [(inferred_op(path, function), f"@{text} (aten_op inferred from the name)")]
    return []


def infers(deco: ast.Call) -> bool:
    """A call of a registering factory that leaves the op to be inferred."""
    given = {k.arg for k in deco.keywords}
    return "aten_op" not in given and not _opts_out(deco)


Pending = tuple[str, tuple[str, ...], str, int, str]  # (function, chain, how, line, op)


def pending_factory_calls(
    path: str, symbols: dict[str, Symbol], aliases: Collection[str]
) -> list[Pending]:
    """Decorators, and module-level `name = factory(...)` assignments, that may be a
    registering factory imported from another module: (function, the factory's chain, the
    text, line, the op it would register), resolved once the factory's module is known
    (selection.links.explore: `inferring_factories` of the module it resolves to)."""
    local = inferring_factories(symbols, aliases)
    found = []
    for qualname, symbol in symbols.items():
        if "." in qualname:
            continue
        for deco in (d for node in symbol.definitions for d in node.decorator_list):
            if not isinstance(deco, ast.Call) or _aten_ops(deco, aliases) or not infers(deco):
                continue
            chain = chain_of(deco.func)
            if chain and chain[-1] not in local:
                op = inferred_op(path, qualname)
                found.append((qualname, chain, f"@{ast.unparse(deco)}", deco.lineno, op))
    for name, call in _built_by_factories(symbols):
        chain = chain_of(call.func)
        if chain and chain[-1] not in local and infers(call):
            found.append((name, chain, _built_text(name, call), call.lineno, name))
    return found


def _built_text(name: str, call: ast.Call) -> str:
    return f"{name} = {ast.unparse(call)}"[:120]


def _built_by_factories(symbols: dict[str, Symbol]) -> Iterator[tuple[str, ast.Call]]:
    """Module-level `name = factory(...)` assignments (`abs_ = _make_inplace(abs)`): what a
    factory built, which it may register under an op named like it."""
    for qualname, symbol in symbols.items():
        if "." in qualname or symbol.kind != "assign":
            continue
        for node in symbol.runtime_nodes:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
            ):
                yield qualname, node.value


def _module_level(
    node: ast.stmt, functions: set[str], aliases: Collection[str]
) -> Iterator[tuple[str, str, str]]:
    """(function, aten op, how) from module-level registration calls, loops and tables."""
    named = {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and sub.id in functions}
    if not named:
        return
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets):
        ops = [op for t in node.targets for op in _aten_ops(t, aliases)]
    elif isinstance(node, (ast.Expr, ast.For)):
        ops = _aten_ops(node, aliases)
    else:
        return
    text = ast.unparse(node).splitlines()[0][:120]
    for function in sorted(named):
        for op in ops:
            yield function, op, text


def registrations_in(
    path: str, symbols: dict[str, Symbol], aliases: Collection[str]
) -> list[Registration]:
    """Every (aten op, function, how, line) registration of one module."""
    found: list[Registration] = []
    factories = inferring_factories(symbols, aliases)
    functions = {q for q, s in symbols.items() if s.kind == "function"}
    for qualname, symbol in symbols.items():
        if "." in qualname:
            continue
        for deco in (d for node in symbol.definitions for d in node.decorator_list):
            for op, how in _decorator_ops(deco, qualname, aliases, factories, path):
                found.append((op, qualname, how, deco.lineno))
    for name, call in _built_by_factories(symbols):
        chain = chain_of(call.func)
        if chain and chain[-1] in factories and infers(call):
            # named after the op it registers what it builds for (not prefixed as
            # `get_aten_op` prefixes a decorated function's name)
            how = f"{_built_text(name, call)} (aten_op inferred from the name)"
            found.append((name, name, how, call.lineno))
    module = symbols.get(MODULE_SYMBOL)
    for stmt in module.nodes if module is not None else []:
        for function, op, how in _module_level(stmt, functions, aliases):  # type: ignore[arg-type]
            found.append((op, function, how, getattr(stmt, "lineno", 0)))
    return found
