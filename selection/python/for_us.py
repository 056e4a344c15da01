"""The code of a symbol that can run on our device: a copy with another device's code left out. Pure.

Left out: the body of an `if` (or conditional expression) whose test holds only on another
device -- directly (`torch.cuda.is_available()`, `device_type == "cuda"`) or through a
local name assigned such a test (`cond = torch.cuda.is_tf32_supported() and ...`);
`DecorateInfo(..., device_type="cuda")`; when comparing revisions, other devices'
decorators; and, once those are gone, nested functions nothing left calls. Two revisions of a symbol that are equal here differ
only in another device's code. (The link graph applies the same rules while collecting a
symbol's uses: selection.python.summary.)
"""

from __future__ import annotations

import ast
import copy

from selection.devices import device_types_of, guards_other_device, is_other_device_only
from selection.pyast import decorator_other_device


def is_decorate_info(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "DecorateInfo"


def decorate_info_other_device(node: ast.Call, tests: bool = True) -> bool:
    """`DecorateInfo(..., device_type="cuda")`, or one whose decorator or `active_if` is
    another device's: it never applies to our test class."""
    kwargs = {k.arg: k.value for k in node.keywords if k.arg}
    if is_other_device_only(device_types_of(kwargs.get("device_type")), tests):
        return True
    decorator = node.args[0] if node.args else kwargs.get("decorators")
    if decorator is not None and decorator_other_device(decorator, tests):
        return True
    active_if = kwargs.get("active_if")
    return active_if is not None and guards_other_device(active_if, tests)


def has_other_device_code(node: ast.AST, tests: bool, decorators: bool = True) -> bool:
    """Whether `for_us` would leave anything out (most code has nothing to leave out, and
    is then walked as it is, without a copy)."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.If, ast.IfExp)) and guards_other_device(sub.test, tests):
            return True
        if isinstance(sub, ast.Assign) and guards_other_device(sub.value, tests):
            return True
        if (
            decorators
            and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and any(decorator_other_device(d, tests) for d in sub.decorator_list)
        ):
            return True
        if is_decorate_info(sub) and decorate_info_other_device(sub, tests):  # type: ignore[arg-type]
            return True
    return False


class _ForUs(ast.NodeTransformer):
    def __init__(self, tests: bool, decorators: bool) -> None:
        self.tests = tests
        self.decorators = decorators
        self.guards: set[str] = set()

    def other_device(self, test: ast.expr) -> bool:
        if guards_other_device(test, self.tests):
            return True
        if isinstance(test, ast.Name) and test.id in self.guards:
            return True
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self.other_device(v) for v in test.values)
        return False

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        if self.other_device(node.test):
            kept: list[ast.stmt] = []
            for stmt in node.orelse:
                result = self.visit(stmt)
                kept.extend(result if isinstance(result, list) else [result])
            return kept or [ast.Pass()]
        return self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        if self.other_device(node.test):
            return self.visit(node.orelse)
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if self.other_device(node.value):
            self.guards.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if is_decorate_info(node) and decorate_info_other_device(node, self.tests):
            return ast.Constant(None)
        return self.generic_visit(node)

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        if self.decorators:
            node.decorator_list = [
                d for d in node.decorator_list if not decorator_other_device(d, self.tests)
            ]
        return self.generic_visit(node)

    visit_FunctionDef = _definition
    visit_AsyncFunctionDef = _definition
    visit_ClassDef = _definition


def _loaded_names(node: ast.AST, skip: set[int]) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in skip:
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load):
            found.add(current.id)
        stack.extend(ast.iter_child_nodes(current))
    return found


def _drop_dead_nested(root: ast.AST) -> None:
    """Remove nested functions no remaining code names (those only another device's code
    called), until none is left to remove."""
    while True:
        nested = [
            (parent, child)
            for parent in ast.walk(root)
            if isinstance(getattr(parent, "body", None), list)
            for child in parent.body  # type: ignore[attr-defined]
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        dead = [
            (parent, child)
            for parent, child in nested
            if child.name not in _loaded_names(root, skip={id(child)})
        ]
        if not dead:
            return
        for parent, child in dead:
            body = [s for s in getattr(parent, "body", []) if s is not child]
            parent.body = body or [ast.Pass()]  # type: ignore[attr-defined]


def for_us(nodes: list[ast.AST], tests: bool, decorators: bool = True) -> list[ast.AST]:
    """Copies of `nodes` with the code only another device runs left out. `decorators`:
    also leave out decorators named for another device -- right when comparing two
    revisions (adding `@skipCUDAIf` changes nothing here), wrong when collecting uses: the
    decorator's wrapper runs on every device (`skipCUDAIf` checks the device at run time)."""
    out: list[ast.AST] = []
    transformer = _ForUs(tests, decorators)
    for node in nodes:
        kept = transformer.visit(copy.deepcopy(node))
        for item in kept if isinstance(kept, list) else [kept]:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _drop_dead_nested(item)
            out.append(item)
    return out
