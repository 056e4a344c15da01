"""What a module runs when it is imported: the modules it imports then and the code it calls
then. Pure over one parsed module.

Python runs a module's top-level statements on import. Of them, what runs code elsewhere is:
the imports (each imported module runs its own top-level statements in turn), calls in
module-level statements, and, for each top-level function and class, its decorators and
default values, plus a class body's statements (but not its methods' bodies). An import
inside a function, or under `if TYPE_CHECKING:`, does not run on import.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from selection.pyast import normalized_fingerprint
from selection.python.runtime_annotations import UNKNOWN, ModuleReaders, built_where_defined

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _is_type_checking(test: ast.expr) -> bool:
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return name == "TYPE_CHECKING"


def _is_main_guard(test: ast.expr) -> bool:
    """`if __name__ == "__main__":` -- true only when the module runs as a script."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run on import, blocks (`if`, `try`, `with`) opened, but neither
    function nor class bodies, nor an `if TYPE_CHECKING:` or `if __name__ == "__main__":`
    body."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if not (_is_type_checking(stmt.test) or _is_main_guard(stmt.test)):
                yield from top_level_statements(stmt.body)
            yield from top_level_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse):
                yield from top_level_statements(block)
            yield from top_level_statements(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from (ast.Expr(item.context_expr) for item in stmt.items)
            yield from top_level_statements(stmt.body)
        else:
            yield stmt


def imported_modules(
    tree: ast.Module, absolute: Callable[[str | None, int], str]
) -> tuple[str, ...]:
    """Dotted names of the modules the import runs (`from torch import _meta_registrations`
    gives `torch` and `torch._meta_registrations`: the name may be a submodule; the caller
    keeps the names that are modules). `absolute`: the absolute module of a `from` import's
    (module, level)."""
    found: list[str] = []
    for stmt in top_level_statements(tree.body):
        if isinstance(stmt, ast.Import):
            found += [alias.name for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            module = absolute(stmt.module, stmt.level)
            found.append(module)
            found += [f"{module}.{alias.name}" for alias in stmt.names if alias.name != "*"]
    return tuple(dict.fromkeys(m for m in found if m))


def load_time_nodes(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """The expressions and statements whose code runs on import, besides the imports, each
    with how it is used there (summary.Use.how): module-level statements (defs and classes
    excluded), and each top-level definition's decorators ("decorator": each is applied to
    the definition) and defaults (a class: its bases and its body's statements too)."""
    for stmt in top_level_statements(tree.body):
        if isinstance(stmt, (*FUNCTION_DEFS, ast.ClassDef)):
            yield from _definition_parts(stmt)
        elif not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt, "reference"


def _definition_parts(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
) -> Iterator[tuple[ast.AST, str]]:
    yield from ((d, "decorator") for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        yield from ((b, "reference") for b in node.bases)
        for stmt in node.body:
            if isinstance(stmt, (*FUNCTION_DEFS, ast.ClassDef)):
                yield from _definition_parts(stmt)
            else:
                yield stmt, "reference"
        return
    defaults = [*node.args.defaults, *node.args.kw_defaults]
    yield from ((d, "reference") for d in defaults if d is not None)


def definition_changed(
    old: list[ast.AST], new: list[ast.AST], readers: ModuleReaders = UNKNOWN
) -> bool:
    """Do a function's decorators, default values or what a decorator builds from where it
    is defined (custom_op's schema) differ, by behaviour? False for anything but one
    function on each side. `readers`: what of its module reads annotations."""
    if len(old) != 1 or len(new) != 1:
        return False
    before, after = old[0], new[0]
    if not isinstance(before, FUNCTION_DEFS) or not isinstance(after, FUNCTION_DEFS):
        return False
    return normalized_fingerprint(_definition_time(before, readers)) != normalized_fingerprint(
        _definition_time(after, readers)
    )


def _definition_time(
    node: ast.FunctionDef | ast.AsyncFunctionDef, readers: ModuleReaders
) -> list[ast.AST]:
    """Its decorators and defaults (a literal default runs nothing there: the comparison
    passes over a bare constant), and what a decorator builds from where it is defined
    (runtime_annotations.built_where_defined, one tuple: its `None` types count)."""
    parts = [e for e, _how in _definition_parts(node) if isinstance(e, ast.expr)]
    built = built_where_defined(node, readers)
    parts += [built] if built is not None else []
    return [ast.Expr(part) for part in parts]


def calls_on_load(nodes: list[ast.AST]) -> bool:
    """Does a module-level symbol's code that runs on import call anything? An assignment's
    statements, a class's header and body (not its methods' bodies), a function's
    decorators and defaults. A plain value (`_registered = {}`) calls nothing: a change
    there matters through what reads it."""
    parts: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, (*FUNCTION_DEFS, ast.ClassDef)):
            parts += [part for part, _how in _definition_parts(node)]
        else:
            parts.append(node)
    return any(isinstance(n, ast.Call) for part in parts for n in _walk_on_load(part))


def _walk_on_load(node: ast.AST) -> Iterator[ast.AST]:
    """ast.walk, without entering function definitions or lambdas (their bodies run later)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (*FUNCTION_DEFS, ast.Lambda)):
            yield from _walk_on_load(child)
