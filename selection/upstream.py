"""Parse the upstream testing infrastructure of one revision into an OpDatabase.

The file layout is PyTorch's: the OpInfo database in `common_methods_invocations.py` and
`opinfo/definitions/`, OpInfo classes in `opinfo/core.py` and `opinfo/refs.py`, dtype
helpers in `common_dtype.py`, the ModuleInfo database in `common_modules.py`.
A file that cannot be parsed is reported (the caller widens), never skipped silently.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from selection.dtypes_eval import DtypeEvaluator
from selection.opinfo_db import DbParse, parse_database
from selection.oplists import OpDatabase
from selection.sources.tree import SourceTree

INTERNAL = "torch/testing/_internal"
DTYPE_HELPERS = f"{INTERNAL}/common_dtype.py"
CLASS_FILES = (f"{INTERNAL}/opinfo/core.py", f"{INTERNAL}/opinfo/refs.py")
DATABASE_MAIN = f"{INTERNAL}/common_methods_invocations.py"
DEFINITIONS_DIR = f"{INTERNAL}/opinfo/definitions"
MODULE_DB = f"{INTERNAL}/common_modules.py"
NATIVE_FUNCTIONS = "native_functions.yaml"
DERIVATIVES = "derivatives.yaml"


# Python sources analysed symbol by symbol: all of the library and the tests (a change is
# behaviour-free, another device's, or reaches tests through the link graph).
SYMBOL_ROOTS = ("torch/", "test/")


def analysed_by_symbol(path: str) -> bool:
    return path.endswith(".py") and path.startswith(SYMBOL_ROOTS)


def is_database_file(path: str) -> bool:
    return path in (DATABASE_MAIN, MODULE_DB) or (
        path.startswith(DEFINITIONS_DIR + "/") and path.endswith(".py")
    )


def is_native_yaml(path: str) -> bool:
    return (
        path.endswith("/" + NATIVE_FUNCTIONS)
        or path.endswith("/" + DERIVATIVES)
        or path
        in (
            NATIVE_FUNCTIONS,
            DERIVATIVES,
        )
    )


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("test/") and name.startswith("test_") and name.endswith(".py")


@dataclass
class ParsedTrees:
    """Parsed modules of one revision, shared by the stages (parsing is the expensive part)."""

    tree: SourceTree
    modules: dict[str, ast.Module | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    databases: dict[str, DbParse] = field(default_factory=dict)

    def database(self, path: str, dtype_eval: DtypeEvaluator) -> DbParse | None:
        """The entries of one database file (parsed once per revision, shared by stages)."""
        if path not in self.databases:
            tree = self.module(path)
            if tree is None:
                return None
            self.databases[path] = parse_database(tree, path, dtype_eval, self.tree.read(path))
        return self.databases[path]

    def module(self, path: str) -> ast.Module | None:
        if path not in self.modules:
            self.modules[path] = self.parse(path)
        return self.modules[path]

    def release(self, keep: tuple[str, ...] = ()) -> None:
        """Forget the parsed modules and database parses (but those of `keep`)."""
        self.modules = {p: m for p, m in self.modules.items() if p in keep}
        self.databases = {}

    def parse(self, path: str) -> ast.Module | None:
        """Parse without keeping the tree (a module already kept is returned as is)."""
        if path in self.modules:
            return self.modules[path]
        text = self.tree.read(path)
        if text is None:
            return None
        try:
            return _parsed(text, path)
        except UNPARSEABLE as exc:
            self.errors[path] = f"{type(exc).__name__}: {exc}"
            return None


# What `ast.parse` raises for text it cannot make a tree of: bad syntax (SyntaxError; a NUL
# byte, ValueError) and nesting too deep for the AST constructor (RecursionError, or
# MemoryError past that), so that such a file widens its dependents instead of stopping the
# run with a traceback.
UNPARSEABLE = (SyntaxError, ValueError, RecursionError, MemoryError, SystemError)


def _parsed(text: str, path: str) -> ast.Module:
    """`ast.parse`, tried a second time after a SystemError: CPython 3.11's "AST constructor
    recursion depth mismatch" is raised, now and then, for a file that parses the next time."""
    try:
        return ast.parse(text, filename=path)
    except SystemError:
        return ast.parse(text, filename=path)


def database_files(trees: ParsedTrees) -> list[str]:
    definitions = [p for p in trees.tree.list(DEFINITIONS_DIR) if p.endswith(".py")]
    return [DATABASE_MAIN, *definitions, MODULE_DB]


def load_database(trees: ParsedTrees) -> OpDatabase:
    helpers = trees.tree.read(DTYPE_HELPERS)
    dtype_eval = DtypeEvaluator(None)
    helpers_tree = trees.module(DTYPE_HELPERS) if helpers else None
    if helpers_tree is not None:
        dtype_eval.add_module(helpers_tree)
    db = OpDatabase(dtype_eval=dtype_eval)
    for path in CLASS_FILES:
        tree = trees.module(path)
        if tree is not None:
            db.add_classes(tree)
    for path in database_files(trees):
        tree = trees.module(path)
        if tree is None:
            continue
        db.add_classes(tree)
        dtype_eval.add_module(tree)  # module-level dtype constants used by entries
        parsed = trees.database(path, dtype_eval)
        if parsed is not None:
            db.add_entries(parsed.entries, parsed.lists)
        db.add_derived(tree)
    return db
