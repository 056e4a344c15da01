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
- an assignment (or an annotated one) of a literal, an f-string, `"..." % x`, a list, dict
  or set display or comprehension, a tuple display, a call of a builtin constructor
  (`set()`, `dict(...)`, `str(x)`, `sorted(...)`, `collections.defaultdict(list)`, ...), or a
  str method called on such a value (`"-".join(parts)`).
Any other binding -- another assignment, `+=`, a `for` or `with` target, a walrus, an
import, `global`/`nonlocal`, a `del` -- makes the name unknown, as does its absence (a name
of an enclosing function or of the module). Nested functions and lambdas have their own
names; comprehensions bind theirs in their own scope and are read as such.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

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
# Calls that build a builtin value whatever they are given.
CONSTRUCTORS = frozenset(
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
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def plain_values(args: ast.arguments, body: list[ast.stmt] | list[ast.expr]) -> frozenset[str]:
    """The names of a function (its `args` and `body`) that can never hold a tensor."""
    verdicts: dict[str, bool] = {}

    def bind(name: str, plain: bool) -> None:
        verdicts[name] = verdicts.get(name, True) and plain

    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        bind(arg.arg, is_value_annotation(arg.annotation))
    for star in (args.vararg, args.kwarg):
        if star is not None:
            bind(star.arg, True)
    for node in _own_nodes(body):
        for name, plain in _bindings(node):
            bind(name, plain)
    return frozenset(name for name, plain in verdicts.items() if plain)


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
        return _last(node) in VALUE_TYPES
    if isinstance(node, ast.Subscript):
        # the container decides (`list[Tensor]` is a list); typing's wrappers, their members
        outer = _last(node.value)
        if outer in ("Optional", "Union"):
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return all(is_value_annotation(m) for m in members)
        return outer in VALUE_TYPES
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return is_value_annotation(node.left) and is_value_annotation(node.right)
    return False


def is_plain_value(node: ast.expr) -> bool:
    """An expression whose value is never a tensor."""
    if isinstance(node, _DISPLAYS):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return isinstance(node.left, (ast.Constant, ast.JoinedStr))  # "%s" % x
    if isinstance(node, ast.Call):
        if _last(node.func) in CONSTRUCTORS and not isinstance(node.func, ast.Call):
            return isinstance(node.func, ast.Name) or _is_collections(node.func)
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _STR_METHODS
            and isinstance(func.value, (ast.Constant, ast.JoinedStr))
        )
    return False


def _is_collections(func: ast.expr) -> bool:
    """`collections.defaultdict`, not `obj.list`."""
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "collections"
    )


def _last(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _bindings(node: ast.AST) -> Iterator[tuple[str, bool]]:
    """The names one statement or expression node binds, each with whether the value is
    plain."""
    if isinstance(node, ast.Assign):
        plain = is_plain_value(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, plain
            else:
                yield from ((name, False) for name in _stored(target))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        given = node.value is None or is_plain_value(node.value)
        yield node.target.id, given and is_value_annotation(node.annotation)
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from ((name, False) for name in node.names)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0], False
    elif isinstance(node, _NAMING):
        # a definition, `except E as name`, a match capture: whatever it holds
        name = node.rest if isinstance(node, ast.MatchMapping) else node.name
        if name:
            yield name, False
    elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.withitem, ast.NamedExpr)):
        bound = node.optional_vars if isinstance(node, ast.withitem) else node.target
        if bound is not None:
            yield from ((name, False) for name in _stored(bound))
    elif isinstance(node, ast.Delete):
        for deleted in node.targets:
            yield from ((name, False) for name in _stored(deleted))


def _stored(target: ast.AST) -> Iterator[str]:
    for sub in ast.walk(target):
        if isinstance(sub, ast.Name):
            yield sub.id


def _own_nodes(body: list[ast.stmt] | list[ast.expr]) -> Iterator[ast.AST]:
    """The nodes of a function body, not inside nested functions, lambdas, classes or
    comprehensions (their names are their own; a nested definition's name is the
    function's, and a walrus in a comprehension binds in the function: both still seen)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _COMPREHENSIONS):
            stack.extend(n for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            continue
        stack.extend(ast.iter_child_nodes(node))
