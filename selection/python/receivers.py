"""Which local names of a function can never hold a tensor. Pure.

A method called on an object of unknown type is linked by its name alone
(selection.links.calls: `x.split(...)` to `Tensor.split`, `x.add(...)` to `aten::add`). Most
such receivers are tensors, but many are plainly not: `seen = set(); seen.add(node)`,
`kwargs.values()`, `name: str` then `name.split(".")`. Such a call is no use of the tensor
method or op of its name, and linking it joins unrelated code: a change to `aten::values`
(a sparse op) reached every function reading a dict's values.

A name is a *plain value* in a function when every binding of it there gives one:
- a parameter annotated with a builtin container or string type (`str`, `list[str]`,
  `dict[str, Any]`, `Optional[str]`, `str | None`, ...), or `*args` (a tuple) and
  `**kwargs` (a dict);
- an assignment (an annotated one also annotated so) of a literal, an f-string, `"..." % x`,
  a list, dict or set display or comprehension, a tuple display, a call of a builtin
  constructor (`set()`, `dict(...)`, `str(x)`, `sorted(...)`, `collections.defaultdict(list)`;
  not where the function or its module binds that name itself), a str method called on
  a string literal (`"-".join(parts)`), or a call of a function of a standard module none
  of whose functions returns a tensor, imported as such (`regx = re.compile(...)`,
  `os.path.join(...)`; `VALUE_MODULES`).
Any other binding -- another assignment, `+=`, a `for` or `with` target, a walrus, an
import, `global`/`nonlocal`, a `nonlocal` of a function nested in it, a `del` -- makes the
name unknown, as does its absence (a name of an enclosing function or of the module).
Nested functions and lambdas have their own names, and a comprehension its `for` targets:
the use collector (selection.python.summary) takes those out where it enters them.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from typing import NamedTuple

from selection.pyast import COMPREHENSIONS, FUNCTION_DEFS, own_nodes
from selection.python.chains import last_name

# Builtin types and typing's names for them: an annotation built only of these (and None)
# says the value is no tensor.
# Not numbers (`alpha: float` is often given a 0-dim tensor, `dim: int` a SymInt) nor the
# abstract `Iterable`/`Sequence` (a tensor iterates, and is passed for `Sequence[int]`).
VALUE_TYPES = frozenset(
    {
        "str", "bytes", "list", "dict", "set", "frozenset", "tuple", "List", "Dict", "Set",
        "FrozenSet", "Tuple", "Mapping", "MutableMapping", "DefaultDict", "OrderedDict",
        "Counter", "Deque", "deque", "defaultdict", "LiteralString",
    }
)  # fmt: skip
# Calls that build a builtin value whatever they are given (unless the name is rebound).
BUILTIN_CONSTRUCTORS = frozenset(
    {
        "str", "repr", "format", "bytes", "list", "dict", "set", "frozenset", "tuple",
        "sorted", "defaultdict", "OrderedDict", "Counter", "deque",
    }
)  # fmt: skip
_STR_METHODS = frozenset(m for m in dir(str) if not m.startswith("_"))
_DISPLAYS = (
    ast.Constant,
    ast.JoinedStr,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
)
_NAMING = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.ExceptHandler,
    ast.MatchAs,
    ast.MatchStar,
    ast.MatchMapping,
)


def plain_values(
    args: ast.arguments,
    body: list[ast.stmt] | list[ast.expr],
    module_names: Collection[str] = frozenset(),
    value_modules: Collection[str] = frozenset(),
) -> frozenset[str]:
    """The names of a function (its `args` and `body`) that can never hold a tensor.
    `module_names`: what the module defines or imports (a `list` of its own is no builtin);
    `value_modules`: its names of `VALUE_MODULES` imports (`regx = re.compile(...)`)."""
    return scope_names(args, body, module_names, value_modules).plain


class Scope(NamedTuple):
    """The names of one function's scope (`scope_names`)."""

    plain: frozenset[str]  # never a tensor (`plain_values`)
    bound: frozenset[str]  # its parameters and what its own code binds (assigns, imports, declares)
    # what holds its own values there: `bound` less what it imports or declares `global` or
    # `nonlocal` (a module's `check` read where `check = x > 1` was assigned is that bool)
    local: frozenset[str]
    declared_global: frozenset[str]  # the module's names there, whatever else binds them


_IMPORTS = (ast.Import, ast.ImportFrom)
_NOT_LOCAL = (*_IMPORTS, ast.Global, ast.Nonlocal)


def scope_names(
    args: ast.arguments,
    body: list[ast.stmt] | list[ast.expr],
    module_names: Collection[str] = frozenset(),
    value_modules: Collection[str] = frozenset(),
) -> Scope:
    """A function's plain values, the names it binds and its local ones (`Scope`), read in
    one walk of its code."""
    nodes = list(own_nodes(body, comprehensions=False))
    bindings = [(name, value, node) for node in nodes for name, value in _bindings(node)]
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    stars = [star for star in (args.vararg, args.kwarg) if star is not None]
    own = {a.arg for a in (*params, *stars)}
    rebound = frozenset({name for name, _, _ in bindings} | own)
    declared = {n for x in nodes if isinstance(x, (ast.Global, ast.Nonlocal)) for n in x.names}
    module = frozenset(n for x in nodes if isinstance(x, ast.Global) for n in x.names)
    assigned = {name for name, _, node in bindings if not isinstance(node, _NOT_LOCAL)}
    # a name imported there may be assigned a fallback too (`except ImportError: f = None`)
    imported = {name for name, _, node in bindings if isinstance(node, _IMPORTS)}
    local = frozenset((assigned | own) - declared - imported)
    shadowed = rebound | set(module_names)
    verdicts: dict[str, bool] = {}

    def bind(name: str, plain: bool) -> None:
        verdicts[name] = verdicts.get(name, True) and plain

    for arg in params:
        bind(arg.arg, is_value_annotation(arg.annotation))
    for star in stars:
        bind(star.arg, True)
    for name, value, _ in bindings:
        bind(name, value is not None and is_plain_value(value, shadowed, value_modules, rebound))
    for name in _nonlocal_in_nested(nodes):
        bind(name, False)  # a nested function may assign it anything
    plain = frozenset(name for name, plain in verdicts.items() if plain)
    return Scope(plain, rebound, local, module)


def is_plain_literal(node: ast.expr) -> bool:
    """A value that is no tensor whatever the names around mean: a literal, an f-string, a
    display or comprehension, `"%s" % x`, a str method of a string literal."""
    if isinstance(node, ast.Call):
        func = node.func
        return (
            isinstance(func, ast.Attribute) and func.attr in _STR_METHODS and _is_text(func.value)
        )
    return is_plain_value(node)


def is_value_annotation(node: ast.expr | None) -> bool:
    """An annotation naming only builtin value types (and None): `str`, `list[int]`,
    `Optional[dict[str, Any]]`, `str | None`, or such a string."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        if node.value is None:
            return True
        if isinstance(node.value, str):
            try:
                return is_value_annotation(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return False
        return False
    if isinstance(node, (ast.Name, ast.Attribute)):
        return last_name(node) in VALUE_TYPES
    if isinstance(node, ast.Subscript):
        # the container decides (`list[Tensor]` is a list); typing's wrappers, their members
        outer = last_name(node.value)
        if outer in ("Optional", "Union"):
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return all(is_value_annotation(m) for m in members)
        return outer in VALUE_TYPES
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return is_value_annotation(node.left) and is_value_annotation(node.right)
    return False


def is_plain_value(
    node: ast.expr,
    shadowed: Collection[str] = frozenset(),
    value_modules: Collection[str] = frozenset(),
    rebound: Collection[str] = frozenset(),
) -> bool:
    """An expression whose value is never a tensor. `shadowed`: names the code or its
    module binds (a function called `sorted` of its own is no builtin); `value_modules`:
    the module's names of `VALUE_MODULES` imports, unless `rebound` in the function."""
    if isinstance(node, _DISPLAYS):
        return True
    if isinstance(node, ast.BinOp):
        return _is_format(node)  # "%s" % x (`1 % t` is a tensor)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in BUILTIN_CONSTRUCTORS and func.id not in shadowed
        if _is_collections(func) or _is_value_module_call(func, value_modules, rebound):
            return True
        return (
            isinstance(func, ast.Attribute) and func.attr in _STR_METHODS and _is_text(func.value)
        )
    return False


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    )


def _is_format(node: ast.expr) -> bool:
    """`"%s" % x`: a str."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_text(node.left)


def _is_collections(func: ast.expr) -> bool:
    """`collections.defaultdict(...)`, `collections.OrderedDict()`: not `obj.list`."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr in BUILTIN_CONSTRUCTORS
        and isinstance(func.value, ast.Name)
        and func.value.id == "collections"
    )


# Standard modules none of whose functions returns a tensor (`re.compile(...)` is a Pattern,
# `os.path.join(...)` a str); `copy`, `functools`, `itertools`, `operator` may, and so do
# `math.prod([t, u])` and `inspect.unwrap(t)`.
VALUE_MODULES = frozenset(
    {
        "re", "os", "string", "json", "textwrap", "shlex", "fnmatch", "glob", "difflib",
        "hashlib", "platform", "sysconfig", "tempfile", "time", "datetime", "struct",
        "pathlib", "traceback",
    }
)  # fmt: skip


def _is_value_module_call(
    func: ast.expr, value_modules: Collection[str], shadowed: Collection[str]
) -> bool:
    """`re.compile(...)`, `os.path.join(...)`: a function of a module the module imports
    under a name in `value_modules` (`VALUE_MODULES`' imports), not rebound in the
    function."""
    head = func
    while isinstance(head, ast.Attribute):
        head = head.value
    return (
        isinstance(func, ast.Attribute)
        and isinstance(head, ast.Name)
        and head.id in value_modules
        and head.id not in shadowed
    )


def bound_by(node: ast.AST) -> Iterator[str]:
    """The names one node binds in the scope it stands in (`_bindings`)."""
    return (name for name, _ in _bindings(node))


def _bindings(node: ast.AST) -> Iterator[tuple[str, ast.expr | None]]:
    """The names one node of a function's own code binds, each with the value it is given
    when that is one expression (None: anything)."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, node.value
            else:
                yield from ((name, None) for name in _stored(target))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        # `x: list[int] = []` (both must say so); `x: str` alone binds nothing
        if node.value is not None:
            yield node.target.id, node.value if is_value_annotation(node.annotation) else None
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from ((name, None) for name in node.names)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0], None
    elif isinstance(node, _NAMING):
        # a definition, `except E as name`, a match capture: whatever it holds
        name = node.rest if isinstance(node, ast.MatchMapping) else node.name
        if name:
            yield name, None
    elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.withitem, ast.NamedExpr)):
        bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
        if bound is not None:
            yield from ((name, None) for name in _stored(bound))
    elif isinstance(node, ast.Delete):
        for deleted in node.targets:
            yield from ((name, None) for name in _stored(deleted))
    elif isinstance(node, COMPREHENSIONS):
        # its `for` targets are its own; a walrus in it binds in the function
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr):
                yield from ((name, None) for name in _stored(sub.target))


def _stored(target: ast.AST) -> Iterator[str]:
    for sub in ast.walk(target):
        if isinstance(sub, ast.Name):
            yield sub.id


def _nonlocal_in_nested(nodes: list[ast.AST]) -> set[str]:
    """The names functions nested (at any depth) in the code declare `nonlocal`."""
    return {
        name
        for node in nodes
        if isinstance(node, (*FUNCTION_DEFS, ast.Lambda))
        for sub in ast.walk(node)
        if isinstance(sub, ast.Nonlocal)
        for name in sub.names
    }
