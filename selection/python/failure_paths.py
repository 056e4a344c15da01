"""Whether an edit is confined to code that runs only when something fails. Pure.

A *failing tail* is a run of statements that always ends in a `raise`: nothing in it
returns, breaks, continues, yields or awaits, and it writes only names of its own (a message
being put together: `msg = ...`, `parts.append(...)` on a list it made, `if`/`for` over such
statements; a call made for a value, as in `msg = fmt(x)`, is taken to have no other effect;
no `global` or `nonlocal` name). What the tail computes may flow only into messages: into
its own assignments and appends, and into the arguments of `raise SomeError(...)` (a class
by its CapWords name). A name it binds read anywhere else -- an `if` test, a `for`
iterable, the exception raised (`raise err`, `raise make(kind)`) -- makes it no tail.

In a tail, every message position is blanked and everything else is kept: the `if` tests
and `for` headers, the exception classes, a non-message argument of an exception
(`UnsupportedOperatorException(func)`: data a catcher may read). So are the messages that
run only on failure: an `assert`'s, and a message given to `torch._check` and its family as
a lambda (called only on failure) or a constant (kept apart from a lambda: `_check_with`
of 2.13 raises TypeError for a message that is not callable). An f-string message is
formatted on every call, so it is kept. Two revisions equal then differ only in what a
failure says: a test that passes never runs the difference, one that failed still fails
with the same exception, and an `except` choosing by type behaves the same. Only a test
that handles errors itself (assertRaises, a `try`, error inputs:
selection.gradients.handles_errors) can see it, or a catcher that reads the message text.

Nothing is blanked inside a `try` body that has handlers or a `finally`, nor inside a
`with` body (the function itself may catch the exception, return from `finally`, or its
context manager suppress it, and go on with what the tail assigned), nor in nested
functions and lambdas (their caller may catch).
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field

from selection.pyast import FUNCTION_DEFS, Fingerprint, normalized_fingerprint, own_nodes
from selection.python.receivers import bound_by

# torch's check functions and the position of their message argument. The message is
# formatted only when the check fails (a callable is called then, a string used then).
CHECK_MESSAGE_POSITION = {
    "_check": 1,
    "_check_is_size": 1,
    "_check_index": 1,
    "_check_value": 1,
    "_check_type": 1,
    "_check_not_implemented": 1,
    "_check_tensor_all": 1,
    "_check_with": 2,
    "_check_tensor_all_with": 2,
}
_MESSAGE = ast.Constant("<message>")
_LAZY_MESSAGE = ast.Constant("<callable message>")
_CONSTANT_MESSAGE = ast.Constant("<constant message>")
# The detect cause kind of such a change, and what its summary adds.
FAILURE_PATH = "failure-path"
FAILURE_PATH_NOTE = "(only on failing paths: what is raised, a failed check's message)"
# A new container or string: appending to it changes nothing but the message.
_FRESH = (
    ast.List,
    ast.Dict,
    ast.Set,
    ast.Tuple,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.Constant,
    ast.JoinedStr,
)


def confined_to_failure(
    old: list[ast.AST],
    new: list[ast.AST],
    fingerprint: Fingerprint = normalized_fingerprint,
    module_names: frozenset[str] | None = None,
) -> bool:
    """Whether the two revisions of one function (or method) differ only on failing paths:
    they differ, and are equal once those are blanked (`fingerprint`: the symbol's
    comparison, Symbol.fingerprinter), and the new one reads no name the old did not that
    nothing binds (`module_names`: what its module binds; None: not checked). A message
    naming what does not exist raises NameError instead of the exception: a caller that
    catches that exception as control flow (`hasattr` and `Module.__getattr__`'s
    AttributeError) now fails on every call."""
    if len(old) != 1 or len(new) != 1:
        return False
    if not all(isinstance(n, FUNCTION_DEFS) for n in (*old, *new)):
        return False
    if fingerprint(old) == fingerprint(new):
        return False
    if module_names is not None and _unbound(new[0], module_names) - _unbound(old[0], module_names):
        return False
    return fingerprint(success_path(old)) == fingerprint(success_path(new))


_BUILTINS = frozenset(dir(builtins))


def _unbound(function: ast.AST, module_names: frozenset[str]) -> set[str]:
    """Names the function reads that neither its own scope (its parameters and what it
    binds, not what a comprehension or a nested function binds for itself), its module nor
    the builtins bind."""
    read = {
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    args = getattr(function, "args", None)
    params = ast.walk(args) if isinstance(args, ast.arguments) else ()
    bound = {a.arg for a in params if isinstance(a, ast.arg)}
    for node in own_nodes(getattr(function, "body", []), comprehensions=False):
        bound.update(bound_by(node))
    return read - bound - module_names - _BUILTINS


def success_path(nodes: list[ast.AST]) -> list[ast.AST]:
    """Copies of function definitions with their failing tails' messages blanked and the
    failure-only messages of asserts and checks left out."""
    out: list[ast.AST] = []
    for node in nodes:
        shell = copy.deepcopy(node)
        if isinstance(shell, FUNCTION_DEFS):
            shell.body = _SuccessPath(_shared_names(shell)).block(shell.body, catching=False)
        out.append(shell)
    return out


def _shared_names(function: ast.AST) -> set[str]:
    """The names the function declares `global` or `nonlocal` (not its nested functions')."""
    return {
        name
        for node in _own_nodes(function)
        if isinstance(node, (ast.Global, ast.Nonlocal))
        for name in node.names
    }


def _own_nodes(root: ast.AST) -> Iterator[ast.AST]:
    """The nodes under `root`, not descending into nested functions, lambdas or classes."""
    return own_nodes(ast.iter_child_nodes(root))


@dataclass
class _SuccessPath:
    shared: set[str] = field(default_factory=set)

    def block(self, stmts: list[ast.stmt], catching: bool) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, stmt in enumerate(stmts):
            tail = _Tail(self.shared)
            if not catching and tail.accepts(stmts[i:]):
                out.extend(tail.blanked(stmts[i:]))
                return out
            out.append(self.statement(stmt, catching))
        return out

    def statement(self, stmt: ast.stmt, catching: bool) -> ast.stmt:
        """The statement with its nested blocks handled where they may be."""
        if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            stmt.body = self.block(stmt.body, catching)
            stmt.orelse = self.block(stmt.orelse, catching)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            stmt.body = self.block(stmt.body, catching=True)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            caught = catching or bool(stmt.handlers) or bool(stmt.finalbody)
            stmt.body = self.block(stmt.body, catching=caught)
            for handler in stmt.handlers:
                handler.body = self.block(handler.body, catching or bool(stmt.finalbody))
            stmt.orelse = self.block(stmt.orelse, catching or bool(stmt.finalbody))
            stmt.finalbody = self.block(stmt.finalbody, catching=True)
        elif isinstance(stmt, ast.Match):
            for case in stmt.cases:
                case.body = self.block(case.body, catching)
        elif isinstance(stmt, ast.Assert) and not catching:
            stmt.msg = None  # evaluated only when the assertion fails
        if not catching:
            _drop_check_messages(stmt)
        return stmt


def _drop_check_messages(stmt: ast.stmt) -> None:
    """`torch._check(cond, lambda: ...)` and its family, in this statement's own
    expressions (not in nested blocks, handled with their own `catching`, nor in lambdas)."""
    blocks = {"body", "orelse", "finalbody", "handlers", "cases"}
    for name, value in ast.iter_fields(stmt):
        if name in blocks:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.expr) and not isinstance(item, ast.Lambda):
                for node in (item, *_own_nodes(item)):
                    if isinstance(node, ast.Call):
                        _drop_message(node)


def _check_name(func: ast.expr) -> str:
    """`torch._check` -> `_check`; a bare `_check_with(...)` (torch/__init__.py calls its
    own); "" for anything else (`self._check` is some other method)."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return func.attr if func.value.id == "torch" else ""
    return ""


def _drop_message(call: ast.Call) -> None:
    position = CHECK_MESSAGE_POSITION.get(_check_name(call.func))
    if position is None:
        return
    if len(call.args) > position:
        call.args[position] = _message_placeholder(call.args[position])
    for keyword in call.keywords:
        if keyword.arg == "message":
            keyword.value = _message_placeholder(keyword.value)


def _message_placeholder(node: ast.expr) -> ast.expr:
    """A lambda or a constant message (evaluated only on failure) as a placeholder of its
    kind; anything else (an f-string is formatted on every call) as it is."""
    if isinstance(node, ast.Lambda):
        return _LAZY_MESSAGE
    if isinstance(node, ast.Constant):
        return _CONSTANT_MESSAGE
    return node


# -- failing tails -----------------------------------------------------------------------------


@dataclass
class _Tail:
    """Reads a run of statements as a failing tail (see the module docstring)."""

    shared: set[str]
    bound: set[str] = field(default_factory=set)  # the names the tail binds
    messages: set[str] = field(default_factory=set)  # ... by assignment (not loop targets)
    fresh: set[str] = field(default_factory=set)  # ... to a new container or string
    kept: list[ast.AST] = field(default_factory=list)  # expressions that are not messages
    raised: list[ast.Raise] = field(default_factory=list)

    def accepts(self, stmts: list[ast.stmt]) -> bool:
        if not self.raises(stmts):
            return False
        for stmt in self.raised:
            self.kept.extend(_kept_of_raise(stmt, self.messages))
        reads = {n.id for e in self.kept for n in (e, *_own_nodes(e)) if isinstance(n, ast.Name)}
        return not reads & self.bound

    def blanked(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """The accepted tail with its message positions blanked."""
        return [_blanked(s, self.messages) for s in stmts]

    def raises(self, stmts: list[ast.stmt]) -> bool:
        """Whether running `stmts` always ends in a raise, by inert statements."""
        for stmt in stmts:
            if self._raising(stmt):
                return True
            if not self._inert(stmt):
                return False
        return False

    def _raising(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Raise):
            self.raised.append(stmt)
            return True
        if not (isinstance(stmt, ast.If) and stmt.orelse) or _leaves(stmt.test):
            return False
        if self.raises(stmt.body) and self.raises(stmt.orelse):
            self.kept.append(stmt.test)
            return True
        return False

    def _inert(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            return True
        if _leaves(stmt):
            return False
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [_names(t) for t in targets]
            if any(n is None or n & self.shared for n in names):
                return False
            for found in names:
                self.bound.update(found or ())
                self.messages.update(found or ())
                if isinstance(stmt.value, _FRESH) and not isinstance(stmt, ast.AugAssign):
                    self.fresh.update(found or ())
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func  # `parts.append(...)` on a list the tail made
            owner = func.value if isinstance(func, ast.Attribute) else None
            return isinstance(owner, ast.Name) and owner.id in self.fresh
        if isinstance(stmt, ast.If):
            self.kept.append(stmt.test)
            return all(self._inert(s) or self._raising(s) for s in (*stmt.body, *stmt.orelse))
        if isinstance(stmt, ast.For) and not stmt.orelse:
            target = _names(stmt.target)
            if target is None or target & self.shared:
                return False
            self.kept.append(stmt.iter)
            self.bound.update(target)
            return all(self._inert(s) or self._raising(s) for s in stmt.body)
        return False


def _kept_of_raise(stmt: ast.Raise, messages: set[str]) -> list[ast.expr]:
    """What a raise keeps: the exception class and its arguments that are not messages
    (`raise SomeError(...)`), else the whole exception (`raise err`, `raise make(kind)`),
    and the cause."""
    exc = stmt.exc
    kept: list[ast.expr] = [] if stmt.cause is None else [stmt.cause]
    if isinstance(exc, ast.Call) and _is_class_name(exc.func):
        arguments = [*exc.args, *(k.value for k in exc.keywords)]
        kept += [exc.func, *(a for a in arguments if not _message_like(a, messages))]
    elif exc is not None:
        kept.append(exc)
    return kept


def _is_class_name(func: ast.expr) -> bool:
    """`ValueError`, `torch._dynamo.exc.Unsupported`: an exception class by its CapWords
    name (a lower-case callee, `make_error(kind)` or `error_type(msg)`, may choose the type
    by its arguments)."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name[:1].isupper()


def _message_like(node: ast.expr, bound: set[str]) -> bool:
    """A string or a message name the tail made: what an exception says, not data."""
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        return isinstance(node, ast.JoinedStr) or isinstance(node.value, str)
    if isinstance(node, ast.Name):
        return node.id in bound
    if isinstance(node, ast.BinOp):
        return _message_like(node.left, bound) and _message_like(node.right, bound)
    return False


def _names(target: ast.expr) -> set[str] | None:
    """The names a target binds, or None when it writes anything else (an attribute, an
    item: state that outlives the failure)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        found: set[str] = set()
        for element in target.elts:
            inner = _names(element.value if isinstance(element, ast.Starred) else element)
            if inner is None:
                return None
            found |= inner
        return found
    return None


def _leaves(node: ast.AST) -> bool:
    """Whether evaluating it can leave the function or suspend it (`yield`, `await`, and a
    walrus, which writes a name the tail does not track), lambdas and nested defs apart."""
    return any(
        isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
        for n in (node, *_own_nodes(node))
    )


def _blanked(stmt: ast.stmt, messages: set[str]) -> ast.stmt:
    """A tail statement with its message positions blanked (the tail was accepted)."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        stmt.value = _MESSAGE
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        stmt.value.args, stmt.value.keywords = [_MESSAGE], []
    elif isinstance(stmt, ast.Raise) and isinstance(stmt.exc, ast.Call):
        if _is_class_name(stmt.exc.func):
            exc = stmt.exc
            exc.args = [_MESSAGE if _message_like(a, messages) else a for a in exc.args]
            for keyword in exc.keywords:
                if _message_like(keyword.value, messages):
                    keyword.value = _MESSAGE
    elif isinstance(stmt, (ast.If, ast.For)):
        stmt.body = [_blanked(s, messages) for s in stmt.body]
        stmt.orelse = [_blanked(s, messages) for s in stmt.orelse]
    return stmt
