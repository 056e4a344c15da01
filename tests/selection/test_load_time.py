"""What `import torch` runs reaches every reused test (misses of the mutation benchmark:
`register_decomposition` and `activate_meta` made to raise broke the import, and with it
ops the canaries had not picked):

- module-level statements of a module `import torch` imports, and the functions its
  load-time code calls (decorators, module-level calls), get the stratified canary over
  every reused test, beside what their links reach;
- a module only imported lazily (inside a function) keeps its aimed canary;
- a stratified canary runs every (op, dtype) pair once, beside every template per dtype.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

from selection import model
from selection.python.load_time import imported_modules, load_time_nodes
from selection.state import PipelineState
from tests.support.observed_runs import (
    import_causes,
    linked_ops,
    manifest_file,
    select_head,
    upstream_writing,
)
from tests.support.upstream_library import DECOMP_INIT
from tests.support.upstream_repo import MANIFEST, UpstreamRepo

META = "torch/_meta_registrations.py"
LAZY = "torch/_lazy_tables.py"

TORCH_INIT = """from typing import TYPE_CHECKING

from torch import _meta_registrations

if TYPE_CHECKING:
    from torch import _lazy_tables


def _lazy():
    from torch import _lazy_tables

    return _lazy_tables.TABLE
"""

META_TEXT = """import torch

_registered = {}


def register_meta(op):
    def wrapper(fn):
        _registered[op] = fn
        return fn

    return wrapper


@register_meta("aten.abs")
def meta_abs(x):
    return x


meta_abs.__doc__.format(op="abs")  # calls str.format, not meta_abs


_table = dict(abs=1)


class _Registry:
    def __init__(self):
        self.table = {}

    def lookup(self, op):
        return self.table.get(op)


_registry = _Registry()


class MetaTable:
    kind = dict(a=1)


def activate_meta():
    for op, fn in list(_registered.items()):
        _registered[op] = fn


activate_meta()
"""

LAZY_TEXT = """def _build():
    return {"abs": 1}


TABLE = _build()
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    files = {
        "torch/__init__.py": TORCH_INIT,
        "torch/_decomp/__init__.py": DECOMP_INIT,
        META: META_TEXT,
        LAZY: LAZY_TEXT,
    }
    message = "a module `import torch` runs, and one it imports lazily"
    return upstream_writing(tmp_path_factory.mktemp("upstream"), files, message)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return manifest_file(tmp_path_factory.mktemp("manifests"), MANIFEST)


def _pairs(instances: Iterable[model.TestInstance]) -> set[tuple[str | None, str | None]]:
    return {(i.op, i.dtype) for i in instances if i.op is not None}


def _every_pair_runs(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str, cause: str
) -> PipelineState:
    """Select the edit of META; its cause names `cause`, and every reused (op, dtype) pair
    has a selected test."""
    state = select_head(upstream, manifest, upstream.change(META, old, new), tmp_path)
    assert any(cause in c for c in import_causes(state)), import_causes(state)
    assert _pairs(state.reused) <= _pairs(c.instance for c in state.candidates.values())
    assert not [b for b in state.blind_spots if "linked to no reused test" in b]  # covered
    return state


def test_load_time_code_is_module_statements_decorators_and_defaults_not_bodies() -> None:
    tree = ast.parse(
        "import a.b\n"
        "from . import c\n"
        "if TYPE_CHECKING:\n    import d\n"
        "try:\n    import e\nexcept ImportError:\n    pass\n"
        "@deco(1)\ndef f(x=default()):\n    import g\n    body()\n"
        "class K(Base):\n    attr = make()\n    def m(self):\n        inside()\n"
        "setup()\n"
        "if __name__ == '__main__':\n    import h\n    main()\n"
    )
    modules = imported_modules(tree, lambda module, level: "pkg" + (f".{module}" if module else ""))
    assert modules == ("a.b", "pkg", "pkg.c", "e")
    nodes = list(load_time_nodes(tree))
    called = {
        n.func.id
        for node, _how in nodes
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    assert called == {"deco", "default", "make", "setup"}
    # each decorator is applied to its definition (so what `deco(1)` returns runs too)
    assert [ast.unparse(n) for n, how in nodes if how == "decorator"] == ["deco(1)"]


LOAD_TIME_EDITS = [
    pytest.param(
        "_registered[op] = fn\n\n\nactivate",
        "_registered[op] = None\n\n\nactivate",
        "activate_meta modified: runs while `import torch` runs",
        id="a-function-module-level-code-calls",
    ),
    pytest.param(
        "\nactivate_meta()\n",
        "\nactivate_meta()\nactivate_meta()\n",
        "module-level statements run by `import torch`",
        id="module-level-statements",
    ),
    pytest.param(
        "_table = dict(abs=1)",
        "_table = dict(abs=2)",
        "_table modified: runs while `import torch` runs",
        id="a-module-level-assignment-that-calls",
    ),
    pytest.param(
        "class MetaTable:\n    kind = dict(a=1)",
        "class MetaTable:\n    kind = dict(a=2)",
        "MetaTable modified: runs while `import torch` runs",
        id="a-class-header-that-calls",
    ),
    pytest.param(
        "self.table = {}",
        "self.table = {'abs': None}",
        "_Registry.__init__ modified: runs while `import torch` runs",
        id="the-constructor-of-a-class-called-at-import",
    ),
    pytest.param(
        '@register_meta("aten.abs")',
        '@register_meta("aten.neg")',
        "meta_abs modified: runs while `import torch` runs",
        id="a-decorator",
    ),
]


@pytest.mark.parametrize(("old", "new", "cause"), LOAD_TIME_EDITS)
def test_what_import_torch_runs_reaches_every_pair_through_the_canary(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str, cause: str
) -> None:
    _every_pair_runs(upstream, manifest, tmp_path, old, new, cause)


def test_a_registered_kernels_body_or_a_plain_value_does_not_run_at_import(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """A kernel's body runs where its op is traced; a plain value (no call) matters through
    what reads it; a method other than the constructor of a class called at import runs
    where the instance is used: all are linked as usual."""
    head = upstream.change(META, "_registered = {}", "_registered = {'aten.neg': None}")
    assert not import_causes(select_head(upstream, manifest, head, tmp_path / "value"))
    head = upstream.change(
        META, "def meta_abs(x):\n    return x", "def meta_abs(x):\n    return -x"
    )
    assert not import_causes(select_head(upstream, manifest, head, tmp_path))
    # of a class called at import, only the constructor runs there
    head = upstream.change(META, "return self.table.get(op)", "return self.table.get(op, 0)")
    assert not import_causes(select_head(upstream, manifest, head, tmp_path / "method"))


def test_a_module_imported_only_lazily_is_not_run_by_import_torch(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(LAZY, 'return {"abs": 1}', 'return {"abs": 2}')
    state = select_head(upstream, manifest, head, tmp_path)
    assert not import_causes(state)
    assert not linked_ops(state)
    # what nothing reaches stays a blind spot with its canary, named as such
    assert any("_build modified: linked to no reused test" in b for b in state.blind_spots)
    assert state.mapped is not None and state.mapped.canary_causes
