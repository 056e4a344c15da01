"""For which values of a parameter an edit leaves a function as it was. Pure.

Both revisions of the function are *specialized* for one parameter and one class of value
(selection.python.argument_classes: a lambda, None, a str, ...): what the function's code
asks of the parameter and can be answered from the class alone is answered --
`callable(p)`, `p is None`, `p is not None`, `isinstance(p, str)`, and `p`'s truth in a test
(`if p:`, `not p`) for None and a lambda -- then branches decided that way are cut
(`if`, `x if c else y`, `while`, `assert`, a leading `True and`/`False or`), and so is code
after a `return` or `raise`. Two revisions that are then the same (selection.pyast's
normalized fingerprint, the parameter's default left out) behave alike wherever the
parameter holds such a value: 2.14's `_check_with` formats a message that is not callable
where 2.13 raised TypeError, and is the same as before for a lambda and for None.

Only a parameter no code of the function binds again is specialized (argument_classes.
passed_on), only the body (not the decorators, nor the defaults of other parameters, which
read the module's names), and only in a function whose parameters, by name, kind and order,
did not change, whose decorators only register it (any other may wrap it, so that the body
does not see what a call passes), that does not call itself (its recursive call would pass
its own values),
and whose two revisions bind the same names in their own scope, declare the same `global`
and `nonlocal` names and are alike generators or not (what a cut branch binds or yields
still counts). `callable` and `isinstance`, and the builtin types an `isinstance` names,
are answered only where neither the function nor the module binds those names
(`module_names`); of other types, only `torch.Tensor` and the symbolic numbers, which no
literal and no lambda is.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator

from selection.model import UnchangedFor
from selection.pyast import FUNCTION_DEFS, Fingerprint, normalized_fingerprint, own_nodes
from selection.python.argument_classes import (
    BOOL,
    BYTES,
    CALLABLE,
    CLASSES,
    FLOAT,
    INT,
    NONE,
    TEXT,
    bound_names,
    parameter_defaults,
    passed_on,
    plain_decorators,
    signature_of,
)
from selection.python.receivers import bound_by


def unchanged_for(
    old: list[ast.AST],
    new: list[ast.AST],
    module_names: frozenset[str] = frozenset(),
    fingerprint: Fingerprint = normalized_fingerprint,
) -> tuple[UnchangedFor, ...]:
    """Per parameter, the classes of values for which the two revisions of one function
    behave alike; empty when none is known (or the two are not one function each).
    `module_names`: what the module binds at its top level; `fingerprint`: the symbol's
    comparison (Symbol.fingerprinter)."""
    if len(old) != 1 or len(new) != 1:
        return ()
    before, after = old[0], new[0]
    if not isinstance(before, FUNCTION_DEFS) or not isinstance(after, FUNCTION_DEFS):
        return ()
    if _parameters(before) != _parameters(after):
        return ()
    if _calls_itself(before) or _calls_itself(after):
        return ()
    if not (plain_decorators(before) and plain_decorators(after)):
        return ()
    shadowed = module_names | bound_names(before) | bound_names(after)
    scopes = _scope(before), _scope(after)
    found: list[UnchangedFor] = []
    candidates = passed_on(before) & passed_on(after)
    for param in sorted(candidates):
        questions = {**_questions(before, param), **_questions(after, param)}
        if not questions:
            continue  # specialized, both stay as they are: they differ still
        # classes the function's questions answer alike give the same code: once each
        groups: dict[tuple[bool | None, ...], list[str]] = {}
        for code in CLASSES:
            groups.setdefault(_answers(code, questions, shadowed), []).append(code)
        classes = frozenset(
            code
            for codes in groups.values()
            if _alike(before, after, _specializing(param, codes[0], shadowed), scopes, fingerprint)
            for code in codes
        )
        if classes:
            same = _same_default(before, after, param, classes, fingerprint)
            found.append(UnchangedFor(param, classes, same))
    return tuple(found)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[object, ...]:
    args = node.args
    stars = tuple(s.arg if s is not None else None for s in (args.vararg, args.kwarg))
    return (
        tuple(a.arg for a in args.posonlyargs),
        tuple(a.arg for a in args.args),
        tuple(a.arg for a in args.kwonlyargs),
        stars,
    )


Specialize = Callable[[ast.AST], ast.AST]


def _specializing(param: str, code: str, shadowed: frozenset[str]) -> Specialize:
    """`specialized` for one parameter and class, as a function of the revision."""
    return lambda node: specialized(node, param, code, shadowed)


Scope = tuple[frozenset[str], frozenset[str], bool]


def _alike(
    before: ast.AST,
    after: ast.AST,
    specialize: Specialize,
    scopes: tuple[Scope, Scope],
    fingerprint: Fingerprint,
) -> bool:
    """The two revisions, specialized, are the same code, and cutting changed what neither
    does: no name it made no longer local is read, no `global`/`nonlocal` or `yield`
    went with the cut code (`scopes`: the two revisions' own, `_scope`)."""
    old, new = specialize(before), specialize(after)
    if not (_cut_safely(scopes[0], old) and _cut_safely(scopes[1], new)):
        return False
    return fingerprint([old]) == fingerprint([new])


def _cut_safely(original: Scope, cut: ast.AST) -> bool:
    bound, declared, pauses = original
    left, left_declared, left_pauses = _scope(cut)
    if (declared, pauses) != (left_declared, left_pauses):
        return False
    read = {n.id for n in ast.walk(cut) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return not ((bound - left) & read)


def _scope(node: ast.AST) -> Scope:
    """What a function's own code makes of its scope, wherever it stands: the names it
    binds, those it declares `global` or `nonlocal`, whether it yields or awaits."""
    own = list(own_nodes(getattr(node, "body", []), comprehensions=False))
    declared = {n for x in own if isinstance(x, (ast.Global, ast.Nonlocal)) for n in x.names}
    stored = {n.id for n in own if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    params = set(signature_of(node).names) if isinstance(node, FUNCTION_DEFS) else set()
    bound = stored | params | {name for x in own for name in bound_by(x)}
    pauses = any(isinstance(x, (ast.Yield, ast.YieldFrom, ast.Await)) for x in own)
    return frozenset(bound), frozenset(declared), pauses


def _calls_itself(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A call of the function by its own name (`f(...)`) in its code (a call through a
    module, `torch.f(...)`, is told by the link graph: selection.links.argument_reach)."""
    return any(
        isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == node.name
        for sub in ast.walk(node)
    )


def _same_default(
    before: ast.FunctionDef | ast.AsyncFunctionDef,
    after: ast.FunctionDef | ast.AsyncFunctionDef,
    param: str,
    classes: frozenset[str],
    fingerprint: Fingerprint,
) -> bool:
    old, new = _default(before, param), _default(after, param)
    if old is None or new is None:
        return False
    if fingerprint([old]) != fingerprint([new]):
        return False
    return signature_of(after).default(param) in classes


def _default(node: ast.FunctionDef | ast.AsyncFunctionDef, param: str) -> ast.expr | None:
    return next((d for a, d in parameter_defaults(node.args) if a.arg == param), None)


Questions = dict[tuple[str, str], ast.expr | None]


def _questions(node: ast.AST, param: str) -> Questions:
    """What the function's code asks of `param` that a class can answer: `callable`,
    `none`, `truth` (each keyed with ""), and per type an `isinstance` names, `isinstance`
    keyed with the type's text (the type's node as the value)."""
    found: Questions = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _predicate_argument(sub) == param:
            func = sub.func
            if isinstance(func, ast.Name) and func.id == "callable":
                found["callable", ""] = None
            else:
                types = sub.args[1]
                for item in types.elts if isinstance(types, ast.Tuple) else [types]:
                    found["isinstance", ast.unparse(item)] = item
        if isinstance(sub, ast.Compare) and _none_test(sub, param) is not None:
            found["none", ""] = None
        for test in _tests(sub):
            if isinstance(test, ast.Name) and test.id == param:
                found["truth", ""] = None
    return found


def _answers(code: str, questions: Questions, shadowed: frozenset[str]) -> tuple[bool | None, ...]:
    """How a value of class `code` answers the questions, in a fixed order."""
    answers: list[bool | None] = []
    for key in sorted(questions):
        question, item = key[0], questions[key]
        if question == "callable":
            answers.append(code == CALLABLE)
        elif question == "none":
            answers.append(code == NONE)
        elif question == "truth":
            answers.append(_TRUTH.get(code))
        elif item is not None:
            answers.append(_is_instance(item, code, shadowed))
    return tuple(answers)


def _tests(node: ast.AST) -> Iterator[ast.expr]:
    """The expressions `node` reads for their truth."""
    if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
        yield node.test
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node.operand
    elif isinstance(node, ast.BoolOp):
        yield from node.values
    elif isinstance(node, ast.comprehension):
        yield from node.ifs


def specialized(
    node: ast.AST, param: str, code: str, shadowed: frozenset[str] = frozenset()
) -> ast.AST:
    """A copy of the function with what its body asks of `param` answered for a value of
    class `code` (builtins named in `shadowed` are not answered for), the branches so
    decided cut, and its default for `param` left out."""
    shell = copy.deepcopy(node)
    if not isinstance(shell, FUNCTION_DEFS):
        return shell
    default = _default(shell, param)
    if default is not None:
        _blank(shell, default)
    specializer = _Specializer(param, code, shadowed)
    body = [specializer.visit(stmt) for stmt in shell.body]
    flat = [
        s for item in body if item is not None for s in (item if isinstance(item, list) else [item])
    ]
    shell.body = _reachable(flat)
    return shell


def _blank(function: ast.FunctionDef | ast.AsyncFunctionDef, default: ast.expr) -> None:
    args = function.args
    for values in (args.defaults, args.kw_defaults):
        for i, value in enumerate(values):
            if value is default:
                values[i] = ast.Constant("<default>")


# What `isinstance(p, T)` answers for a value of each class, by T's name (builtins only;
# `Tensor` and the symbolic numbers hold no literal and no lambda).
_INSTANCES = {
    "str": {TEXT},
    "bytes": {BYTES},
    "bool": {BOOL},
    "int": {BOOL, INT},
    "float": {FLOAT},
    "object": set(CLASSES),
    **{name: set() for name in ("list", "tuple", "dict", "set", "frozenset", "complex")},
}
# Builtin types no value of these classes is, and torch's that none is (`torch.Tensor`).
_NEVER_ONE = frozenset({"Tensor", "SymInt", "SymFloat", "SymBool"})


def _isinstance(types: ast.expr, code: str, shadowed: frozenset[str]) -> bool | None:
    """True if a type the test names holds the value, False if none does, None when a type
    it names is not known."""
    items = types.elts if isinstance(types, ast.Tuple) else [types]
    answers = [_is_instance(item, code, shadowed) for item in items]
    if True in answers:
        return True
    return None if None in answers else False


def _is_instance(item: ast.expr, code: str, shadowed: frozenset[str]) -> bool | None:
    """`isinstance(value, item)` for a value of class `code`, where the name tells."""
    if isinstance(item, ast.Name):
        name = item.id if item.id not in shadowed else ""
    elif isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name):
        module, name = item.value.id, item.attr
        if module == "torch" and name in _NEVER_ONE:
            return False
        name = name if module == "builtins" and module not in shadowed else ""
    else:
        return None
    if name in _INSTANCES:
        return code in _INSTANCES[name]
    return None


def _predicate_argument(call: ast.Call) -> str | None:
    """The name `callable(p)` or `isinstance(p, T)` asks about."""
    func = call.func
    if not isinstance(func, ast.Name) or func.id not in ("callable", "isinstance"):
        return None
    if call.keywords or len(call.args) != (1 if func.id == "callable" else 2):
        return None
    first = call.args[0]
    return first.id if isinstance(first, ast.Name) else None


def _none_test(compare: ast.Compare, param: str) -> bool | None:
    """`p is None` (True), `p is not None` (False); None for any other comparison."""
    if len(compare.ops) != 1:
        return None
    left, right = compare.left, compare.comparators[0]
    names = {getattr(x, "id", None) for x in (left, right) if isinstance(x, ast.Name)}
    nones = [x for x in (left, right) if isinstance(x, ast.Constant) and x.value is None]
    if names != {param} or len(nones) != 1:
        return None
    if isinstance(compare.ops[0], (ast.Is, ast.Eq)):
        return True
    if isinstance(compare.ops[0], (ast.IsNot, ast.NotEq)):
        return False
    return None


# The truth of a value of a class, where the class alone tells it.
_TRUTH = {NONE: False, CALLABLE: True}


class _Specializer(ast.NodeTransformer):
    def __init__(self, param: str, code: str, shadowed: frozenset[str]) -> None:
        self.param = param
        self.code = code
        self.shadowed = shadowed  # builtins the function or the module binds

    # -- what the code asks, answered ----------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _predicate_argument(node) != self.param:
            return node
        func = node.func
        if not isinstance(func, ast.Name) or func.id in self.shadowed:
            return node
        if func.id == "callable":
            return ast.Constant(self.code == CALLABLE)
        answer = _isinstance(node.args[1], self.code, self.shadowed)
        return node if answer is None else ast.Constant(answer)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        is_none = _none_test(node, self.param)
        if is_none is None:
            return node
        return ast.Constant((self.code == NONE) == is_none)

    def _truth(self, node: ast.expr) -> ast.expr:
        """`node` read for its truth: a bare `p` answered where its class tells."""
        if isinstance(node, ast.Name) and node.id == self.param and self.code in _TRUTH:
            return ast.Constant(_TRUTH[self.code])
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        operand = self._truth(node.operand)
        if isinstance(operand, ast.Constant):
            return ast.Constant(not operand.value)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        """Leading operands whose truth is known: `True and x` is x, `False and x` False
        (`or` alike); later ones are kept (the operands before them run first)."""
        self.generic_visit(node)
        values = list(node.values)
        stops = isinstance(node.op, ast.Or)  # the truth that ends the evaluation
        while len(values) > 1:
            truth = self._truth(values[0])
            if not isinstance(truth, ast.Constant):
                break
            if bool(truth.value) == stops:
                return values[0]  # its value is the result (`p or x` with p None: None)
            values.pop(0)
        if len(values) == 1:
            return values[0]
        node.values = values
        return node

    # -- branches decided -----------------------------------------------------------------------
    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        test = self._truth(node.test)
        if isinstance(test, ast.Constant):
            return node.body if test.value else node.orelse
        return node

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        test = self._truth(node.test)
        if isinstance(test, ast.Constant):
            return (node.body if test.value else node.orelse) or [ast.Pass()]
        return node

    def visit_While(self, node: ast.While) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        test = self._truth(node.test)
        if isinstance(test, ast.Constant) and not test.value:
            return node.orelse or [ast.Pass()]
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST | None:
        self.generic_visit(node)
        test = self._truth(node.test)
        return None if isinstance(test, ast.Constant) and test.value else node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, name, _reachable(block))
        return node


def _reachable(block: list[ast.stmt]) -> list[ast.stmt]:
    """The statements up to the first that always leaves the block; a `pass` beside others
    dropped (what cutting a branch leaves is compared as the code it stands for)."""
    out: list[ast.stmt] = []
    for stmt in block:
        if isinstance(stmt, ast.Pass):
            continue
        out.append(stmt)
        if isinstance(stmt, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
            break
    return out or [ast.Pass()]
