"""What a call passes, by class of value, read from its code alone. Pure.

Some edits change a function only for some values of one parameter: 2.14's `_check_with`
formats a message that is not callable instead of raising TypeError, and behaves as before
for a lambda or None (selection.python.specialize tells which classes an edit leaves alone).
A call then reaches the edit only if it can pass a value of another class there. What a call
passes is known for literals and lambdas; a parameter of the calling function passed on
unchanged (`_check(cond, message)` -> `_check_with(RuntimeError, cond, message)`) makes the
caller conditioned in turn, on what its own callers pass.

A *call shape* is one code per positional argument, then `name=code` per keyword argument:

- `f` a lambda or a function's name (callable), `n` None, `s` a str (a literal, an f-string, `"%s" % x`), `y`
  bytes, `b` True or False, `i` an int literal, `r` a float literal;
- `p:name` the calling function's own parameter `name`, passed on as it came in (no code in
  the function, nested functions included, binds that name again);
- `?` anything else; a `*args` ends the positional codes with `*`, a `**kwargs` adds `**`
  (what they hold, and so every position or name past them, is not known).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from selection.pyast import own_nodes
from selection.python.receivers import bound_by

CALLABLE = "f"
NONE = "n"
TEXT = "s"
BYTES = "y"
BOOL = "b"
INT = "i"
FLOAT = "r"
UNKNOWN = "?"
STARRED = "*"
DOUBLE_STARRED = "**"
PARAMETER = "p:"
# Every class a value of which a call site can be known to pass.
CLASSES = (CALLABLE, NONE, TEXT, BYTES, BOOL, INT, FLOAT)

CallShape = tuple[str, ...]


@dataclass(frozen=True)
class Signature:
    """A function's parameters as a call binds them: `positional` (positional-only, then
    plain), `keyword_only`; the code (module docstring) of each default value; whether it
    takes `*args` or `**kwargs`; how many of `positional` are positional-only (a keyword of
    that name goes to `**kwargs`)."""

    positional: tuple[str, ...]
    keyword_only: tuple[str, ...] = ()
    defaults: tuple[tuple[str, str], ...] = ()
    varargs: bool = False
    varkw: bool = False
    positional_only: int = 0

    @property
    def names(self) -> tuple[str, ...]:
        """Every parameter's name (`*args` and `**kwargs` not named)."""
        return (*self.positional, *self.keyword_only)

    def default(self, name: str) -> str | None:
        """The code of `name`'s default value; None when it has none (it must be passed)."""
        return dict(self.defaults).get(name)


def signature_of(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> Signature:
    args = node.args
    return Signature(
        tuple(a.arg for a in (*args.posonlyargs, *args.args)),
        tuple(a.arg for a in args.kwonlyargs),
        tuple((a.arg, _intern(value_code(value))) for a, value in parameter_defaults(args)),
        args.vararg is not None,
        args.kwarg is not None,
        len(args.posonlyargs),
    )


# Decorators that register the function and leave the name bound to it as it is
# (`register_decomposition` returns the function it was given; `register_meta` returns it
# wrapped by `_convert_out_params`, which renames `out=` arguments, so it is not one).
PLAIN_DECORATORS = frozenset({"register_decomposition", "register_op_impl"})


def plain_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every decorator only registers the function (PLAIN_DECORATORS): any other may wrap
    it, so that its body does not see what a call passes (`elementwise_type_promotion_
    wrapper` turns an int into a float, `out_wrapper` handles `out`)."""
    for decorator in node.decorator_list:
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
        if name not in PLAIN_DECORATORS:
            return False
    return True


def module_bindings(statements: list[ast.stmt]) -> Counter[str]:
    """How often the module's top-level code binds each name: definitions, assignments,
    imports, also inside top-level `if`/`try`/`for`/`with` blocks (not inside functions
    or classes); a name a function declares `global` counts twice (rebound at run time)."""
    found: Counter[str] = Counter()
    for node in own_nodes(statements, comprehensions=False):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found[node.id] += 1
        elif not isinstance(node, ast.Name):
            found.update(bound_by(node))
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Global):
                found.update({name: 2 for name in node.names})
    return found


def parameter_defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """Each parameter that has a default, with it."""
    positional = [*args.posonlyargs, *args.args]
    first = len(positional) - len(args.defaults)
    found = list(zip(positional[first:], args.defaults, strict=True))
    kw = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    return found + [(a, d) for a, d in kw if d is not None]


def value_code(node: ast.expr) -> str:
    """The class of a value written in code (the module docstring), `?` when not known."""
    if isinstance(node, ast.Lambda):
        return CALLABLE
    if isinstance(node, ast.JoinedStr):
        return TEXT
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = value_code(node.left) if isinstance(node.left, (ast.Constant, ast.JoinedStr)) else ""
        return left if left in (TEXT, BYTES) else UNKNOWN  # `"%s" % x` formats text
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None:
            return NONE
        if isinstance(value, bool):
            return BOOL
        for kind, code in ((str, TEXT), (bytes, BYTES), (int, INT), (float, FLOAT)):
            if isinstance(value, kind):
                return code
    return UNKNOWN


def passed_on(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The parameters a call in the function's code passes on as they came in: those no code
    of it binds again (an assignment, a loop or `with` target, `del`, an import, a nested
    function's or comprehension's own parameter or target of that name, `global` or
    `nonlocal`). `*args` and `**kwargs` are never passed on whole."""
    args = function.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return frozenset(params - bound_names(function))


def callable_names(
    function: ast.FunctionDef | ast.AsyncFunctionDef, module_functions: frozenset[str]
) -> frozenset[str]:
    """The names that hold a function wherever the function's code reads them: a function
    its own code defines once (not one a nested function or class defines) and binds no
    other way anywhere in it, and one the module defines once (`module_functions`) that
    the function does not bind at all."""
    bound = Counter(_bindings(function))
    bound.update(a.arg for a in _own_args(function.args))
    own = {
        node.name
        for node in own_nodes(function.body)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and bound[node.name] == 1
    }
    return frozenset(own | {name for name in module_functions if name not in bound})


def bound_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Every name the function's code binds, nested code included (`_bindings`)."""
    return frozenset(_bindings(function))


def _bindings(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[str]:
    """Each binding of a name in the function's code, nested code included, but not its own
    parameters: an assignment, a loop, `with` or comprehension target, `del`, a walrus,
    an import, a nested function's or lambda's parameter, a nested definition, an
    `except ... as`, a `match` capture, `global` and `nonlocal`."""
    own = _own_args(function.args)
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            yield node.id
        elif isinstance(node, ast.arg) and not any(node is a for a in own):
            yield node.arg  # a nested function's or lambda's parameter
        else:
            yield from bound_by(node)


def _own_args(args: ast.arguments) -> list[ast.arg]:
    stars = [s for s in (args.vararg, args.kwarg) if s is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *stars]


def call_shape(
    call: ast.Call,
    passing: frozenset[str] = frozenset(),
    callables: frozenset[str] = frozenset(),
) -> CallShape:
    """The call's shape (module docstring); `passing`: the calling function's parameters
    passed on as they came in (`passed_on`); `callables`: the names that hold a function
    there (`callable_names`)."""
    codes: list[str] = []
    for argument in call.args:
        if isinstance(argument, ast.Starred):
            codes.append(STARRED)
            break
        codes.append(_argument_code(argument, passing, callables))
    for keyword in call.keywords:
        if keyword.arg is None:
            codes.append(DOUBLE_STARRED)
        else:
            value = _argument_code(keyword.value, passing, callables)
            codes.append(f"{keyword.arg}={value}")
    return tuple(_intern(c) for c in codes)


def _argument_code(node: ast.expr, passing: frozenset[str], callables: frozenset[str]) -> str:
    if isinstance(node, ast.Name) and node.id in passing:
        return PARAMETER + node.id
    if isinstance(node, ast.Name) and node.id in callables:
        return CALLABLE
    return value_code(node)


def text_positions(shape: CallShape) -> tuple[int, ...]:
    """The positional arguments that are text (a str or bytes value)."""
    found = []
    for position, code in enumerate(shape):
        if code in (STARRED, DOUBLE_STARRED) or "=" in code:
            break
        if code in (TEXT, BYTES):
            found.append(position)
    return tuple(found)


def passed(shape: CallShape, signature: Signature, name: str) -> str | None:
    """The code of what a call of that shape passes for parameter `name` of a function with
    that signature; `default:<code>` when it leaves it out (the default's code); None when
    that cannot be told (past a `*args` or `**kwargs`, or a call that passes it twice,
    which raises)."""
    positional = signature.positional
    place = positional.index(name) if name in positional else None
    by_keyword = place is None or place >= signature.positional_only
    given: list[str] = []
    for position, code in enumerate(shape):
        if code == STARRED:
            if place is not None and place >= position:
                return None  # `*args` may fill it
            continue
        if code == DOUBLE_STARRED:
            return None
        keyword, equals, value = code.partition("=")
        if equals:
            if keyword == name and by_keyword:
                given.append(value)
        elif position == place:
            given.append(code)
    if len(given) > 1:
        return None
    if given:
        return given[0]
    default = signature.default(name)
    return None if default is None else DEFAULT + default


DEFAULT = "default:"


def _intern(code: str) -> str:
    # the summaries hold hundreds of thousands of shapes made of a few dozen codes
    return sys.intern(code)
