"""What `import torch` runs, beyond its module-level code (selection.links.startup): a
decorator factory's returned decorator runs where it is applied, a nested helper its caller
calls runs with it, but the function a factory returns runs only when a test calls it. A
change that runs on import gets the canary over every test; one that runs only in tests is
linked as usual, without that canary."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.observed_runs import (
    import_causes,
    manifest_file,
    select_head,
    upstream_writing,
)
from tests.support.upstream_library import DECOMP_INIT
from tests.support.upstream_repo import MANIFEST, UpstreamRepo

DECOMPOSITIONS = "torch/_decomp/decompositions.py"
TENSOR = "torch/_tensor.py"
TENSOR_TEXT = """class Tensor:
    def split(self, split_size, dim=0):
        return [self]
"""

TORCH_INIT = """from torch import _tensor
from torch._decomp import decompositions
"""

DECOMPOSITIONS_TEXT = """import torch
from torch._decomp import register_decomposition

aten = torch._ops.ops.aten


def _checked(op):
    return op


def _leaf(op):
    return op


def _walk(ops):
    def visit(op):
        return _leaf(op)

    return [visit(op) for op in ops]


def _registered_now(op):
    return op


def _apply_later(op):
    def inner(fn):
        _registered_now(op)
        return fn

    return inner


def _called_by_call():
    return 1


class wrapping:
    def __init__(self, kind):
        self.kind = kind

    def __call__(self, fn):
        _called_by_call()
        return fn

    def describe(self):
        return _described()


def _described():
    return "wrapping"


def _names(text):
    return text.split(",")


def _lazy_only():
    return 0


handlers = {"lazy": lambda: _lazy_only()}


def registering(op):
    def wrapper(fn):
        _checked(op)
        _walk([op])
        _names("a,b")
        _apply_later(op)(fn)
        return register_decomposition(op)(fn)

    return wrapper


def _scaled(x):
    return x * 2


def make_twice(fn):
    def twice(a, b):
        return _scaled(fn(a, b))

    return twice


@registering(aten.mul.Tensor)
@wrapping("twice")
@make_twice
def mul(a, b):
    return a * b


quadruple = make_twice(mul)
"""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> UpstreamRepo:
    files = {
        "torch/__init__.py": TORCH_INIT,
        "torch/_decomp/__init__.py": DECOMP_INIT,
        DECOMPOSITIONS: DECOMPOSITIONS_TEXT,
        TENSOR: TENSOR_TEXT,
    }
    message = "decorator factories and helpers a module `import torch` runs uses"
    return upstream_writing(tmp_path_factory.mktemp("upstream"), files, message)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return manifest_file(tmp_path_factory.mktemp("manifests"), MANIFEST)


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        pytest.param("def _checked(op):\n    return op", "def _checked(op):\n    return [op]",
                     "_checked", id="called-by-the-decorator-a-factory-returns"),
        pytest.param("def _leaf(op):\n    return op", "def _leaf(op):\n    return [op]",
                     "_leaf", id="called-by-a-nested-helper-its-caller-calls"),
        pytest.param("def _registered_now(op):\n    return op",
                     "def _registered_now(op):\n    return [op]", "_registered_now",
                     id="called-by-the-decorator-a-factory-called-mid-way-returns"),
        pytest.param("def _called_by_call():\n    return 1",
                     "def _called_by_call():\n    return 2", "_called_by_call",
                     id="called-by-__call__-of-a-class-instance-applied-as-a-decorator"),
    ],
)  # fmt: skip
def test_code_a_decorator_runs_where_it_is_applied_runs_on_import(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str, name: str
) -> None:
    state = select_head(upstream, manifest, upstream.change(DECOMPOSITIONS, old, new), tmp_path)
    assert f"{DECOMPOSITIONS}: {name} modified: runs while `import torch` runs" in (
        " ".join(import_causes(state))
    ), import_causes(state)


def test_code_only_the_function_a_factory_returns_calls_runs_in_tests_not_on_import(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    """`make_twice` runs on import (it decorates `mul`, and is called at module level), but
    `twice`, which calls `_scaled`, runs only when a test calls the decomposition: no
    canary over every test, and it is linked as usual (here no reused test traces mul, so
    its decomposition runs in none)."""
    head = upstream.change(DECOMPOSITIONS, "return x * 2", "return x * 3")
    state = select_head(upstream, manifest, head, tmp_path)
    assert not import_causes(state)
    assert not state.candidates
    assert state.mapped is not None
    assert state.mapped.no_effect == [
        f"{DECOMPOSITIONS}: _scaled modified: no reused instance reaches it"
    ]


@pytest.mark.parametrize(
    ("old", "new", "on_import"),
    [
        # inside the decorator `registering(op)` returns: it runs where it is applied
        pytest.param("        _checked(op)\n", "        _checked([op])\n", True,
                     id="the-decorator-a-factory-returns"),
        # inside the function `make_twice` returns: it runs when mul is called
        pytest.param("_scaled(fn(a, b))", "_scaled(fn(b, a))", False,
                     id="the-function-a-factory-returns"),
    ],
)  # fmt: skip
def test_an_edit_inside_a_function_a_load_time_function_defines_runs_where_that_one_does(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, old: str, new: str, on_import: bool
) -> None:
    """`registering` and `make_twice` both run on import; an edit confined to a function
    they define runs then only if that function is called then."""
    state = select_head(upstream, manifest, upstream.change(DECOMPOSITIONS, old, new), tmp_path)
    assert bool(import_causes(state)) == on_import, import_causes(state)


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        # a method of a class constructed on import other than its constructor/__call__
        pytest.param(DECOMPOSITIONS, 'return "wrapping"', 'return "wrapped"',
                     id="another-method-of-a-class-constructed-on-import"),
        # a lambda a module-level statement stores, not calls
        pytest.param(DECOMPOSITIONS, "def _lazy_only():\n    return 0",
                     "def _lazy_only():\n    return 1", id="called-by-a-stored-lambda"),
        # `text.split(",")` on import is linked to Tensor.split by name only
        pytest.param(TENSOR, "return [self]", "return [self, self]",
                     id="a-tensor-method-named-like-a-string-method-called-on-import"),
    ],
)  # fmt: skip
def test_what_load_time_code_only_stores_or_names_does_not_run_on_import(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path, path: str, old: str, new: str
) -> None:
    state = select_head(upstream, manifest, upstream.change(path, old, new), tmp_path)
    assert not import_causes(state)
