"""Whether an edit is confined to code that runs only when something fails. Pure.

A *failing tail* is a run of statements at the end of which something is raised, whatever
path is taken through them: nothing in it returns, breaks, continues or yields, and it writes
only local names (a message being put together: `msg = ...`, `parts.append(...)` on a list it
made, `if`/`for` over such statements; a call made for a value, as in `msg = fmt(x)`, is taken
to have no other effect). Collapsing every failing tail to the exception types
it raises (`raise ValueError(f"...")` becomes `raise ValueError`), and leaving out the
messages that are evaluated only on failure (an `assert`'s, and a `torch._check`-family
call's message given as a lambda or a constant), leaves what a function runs when nothing
fails. Two revisions equal there differ only in what a failure says: a test that passes never
runs the difference, a test that failed still fails with the same exception type, and torch's
own `except` clauses, which choose by type, behave the same. Only a test that handles errors
itself (assertRaises, a `try`, error inputs: selection.gradients.handles_errors) can see it.

Nothing is collapsed inside a `try` body that has handlers, nor inside a `with` body (the
function itself may catch the exception, or its context manager suppress it, and go on with
what the tail assigned), nor in nested functions and lambdas (their caller may catch).
"""

from __future__ import annotations

import ast
import copy

from selection.pyast import FUNCTION_DEFS, normalized_fingerprint

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
# The detect cause kind of such a change, and what its summary adds.
FAILURE_PATH = "failure-path"
FAILURE_PATH_NOTE = "(only on failing paths: what is raised, a failed check's message)"
_RERAISE = ast.Name("<re-raise>", ast.Load())


def confined_to_failure(old: list[ast.AST], new: list[ast.AST]) -> bool:
    """Whether the two revisions of one function (or method) differ only on failing paths:
    they differ, and are equal once those are collapsed."""
    if len(old) != 1 or len(new) != 1:
        return False
    if not all(isinstance(n, FUNCTION_DEFS) for n in (*old, *new)):
        return False
    if normalized_fingerprint(old) == normalized_fingerprint(new):
        return False
    return normalized_fingerprint(success_path(old)) == normalized_fingerprint(success_path(new))


def success_path(nodes: list[ast.AST]) -> list[ast.AST]:
    """Copies of function definitions with their failing tails collapsed and failure-only
    messages left out."""
    out: list[ast.AST] = []
    for node in nodes:
        shell = copy.deepcopy(node)
        if isinstance(shell, FUNCTION_DEFS):
            shell.body = _block(shell.body, catching=False)
        out.append(shell)
    return out


def _block(stmts: list[ast.stmt], catching: bool) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for i, stmt in enumerate(stmts):
        if not catching and _fails_from(stmts[i:]):
            out.append(_collapsed(stmts[i:]))
            return out
        out.append(_statement(stmt, catching))
    return out


def _statement(stmt: ast.stmt, catching: bool) -> ast.stmt:
    """The statement with its nested blocks collapsed where they may be."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        stmt.body = _block(stmt.body, catching)
        stmt.orelse = _block(stmt.orelse, catching)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        stmt.body = _block(stmt.body, catching=True)
    elif isinstance(stmt, ast.Try):
        stmt.body = _block(stmt.body, catching=catching or bool(stmt.handlers))
        for handler in stmt.handlers:
            handler.body = _block(handler.body, catching)
        stmt.orelse = _block(stmt.orelse, catching)
        stmt.finalbody = _block(stmt.finalbody, catching=True)
    elif isinstance(stmt, ast.Match):
        for case in stmt.cases:
            case.body = _block(case.body, catching)
    elif isinstance(stmt, ast.Assert) and not catching:
        stmt.msg = None  # evaluated only when the assertion fails
    if not catching:
        _drop_check_messages(stmt)
    return stmt


def _drop_check_messages(stmt: ast.stmt) -> None:
    """`torch._check(cond, lambda: ...)` and its family, in this statement's own
    expressions (not in nested blocks, handled with their own `catching`)."""
    for node in _own_expressions(stmt):
        for call in ast.walk(node):
            if isinstance(call, ast.Call):
                _drop_message(call)


def _own_expressions(stmt: ast.stmt) -> list[ast.AST]:
    blocks = {"body", "orelse", "finalbody", "handlers", "cases"}
    found: list[ast.AST] = []
    for name, value in ast.iter_fields(stmt):
        if name in blocks:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST) and not isinstance(item, (ast.stmt, ast.Lambda)):
                found.append(item)
    return found


def _drop_message(call: ast.Call) -> None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    position = CHECK_MESSAGE_POSITION.get(name)
    if position is None:
        return
    if len(call.args) > position and _failure_only_message(call.args[position]):
        call.args[position] = _MESSAGE
    for keyword in call.keywords:
        if keyword.arg == "message" and _failure_only_message(keyword.value):
            keyword.value = _MESSAGE


def _failure_only_message(node: ast.expr) -> bool:
    """A message whose evaluation cannot fail or act: a lambda (called on failure only), a
    constant, or an f-string of local names and constants (no call, no attribute read)."""
    if isinstance(node, (ast.Lambda, ast.Constant)):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(
            isinstance(sub, (ast.Name, ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Load))
            for sub in ast.walk(node)
        )
    return False


# -- failing tails -----------------------------------------------------------------------------


def _fails_from(stmts: list[ast.stmt]) -> bool:
    """Whether running `stmts` from the first always ends in a raise, writing only local
    names on the way."""
    local: set[str] = set()
    for stmt in stmts:
        if _raises(stmt, local):
            return True
        if not _inert(stmt, local):
            return False
    return False


def _raises(stmt: ast.stmt, local: set[str]) -> bool:
    if isinstance(stmt, ast.Raise):
        return True
    if isinstance(stmt, ast.If) and stmt.orelse:
        return _fails_from(stmt.body) and _fails_from(stmt.orelse)
    return False


def _inert(stmt: ast.stmt, local: set[str]) -> bool:
    """A statement of a failing tail: it writes local names only, and cannot leave the
    tail but by raising. `local` gathers the names written so far."""
    if isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
    ):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [_names(t) for t in targets]
        if any(n is None for n in names) or _leaves(stmt):
            return False
        for found in names:
            local.update(found or ())
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func  # `parts.append(...)` on a list the tail made
        owner = func.value if isinstance(func, ast.Attribute) else None
        return isinstance(owner, ast.Name) and owner.id in local and not _leaves(stmt)
    if isinstance(stmt, ast.If):
        return all(_inert(s, local) or _raises(s, local) for s in (*stmt.body, *stmt.orelse))
    if isinstance(stmt, ast.For) and not stmt.orelse:
        target = _names(stmt.target)
        if target is None:
            return False
        local.update(target)
        return all(_inert(s, local) or _raises(s, local) for s in stmt.body)
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


def _leaves(stmt: ast.stmt) -> bool:
    """Whether evaluating the statement can leave the function or suspend it (a `yield` or
    `await` in an expression; a walrus writes a name the tail does not track)."""
    return any(
        isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
        for node in ast.walk(stmt)
    )


def _collapsed(tail: list[ast.stmt]) -> ast.Raise:
    """One `raise` naming, in order, the exception types the tail raises."""
    types: list[ast.expr] = []
    for stmt in tail:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Raise):
                exc = node.exc
                types.append(
                    _RERAISE if exc is None else exc.func if isinstance(exc, ast.Call) else exc
                )
    return ast.Raise(exc=ast.Tuple(types, ast.Load()), cause=None)
