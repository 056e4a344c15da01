"""Which functions register what they build under an op named after it
(selection.links.registrations): the factories torch's `_refs` and meta registrations use
(`_make_inplace`, `_make_copy_from_view`, `_register_inplace_meta`), and what must not count
as one: a function registered itself, a factory registering the op it is given."""

from __future__ import annotations

import ast

from selection.links.registrations import (
    inferring_factories,
    namespace_aliases,
    pending_factory_calls,
    registrations_in,
)
from selection.pyast import module_symbols

REFS = "torch/_refs/__init__.py"

SOURCE = """
import torch
from torch._decomp import register_decomposition
from torch._meta_registrations import register_meta

aten = torch._ops.ops.aten


def _make_inplace(fn):
    inplace_name = f"{fn.__name__}_"

    def _fn(a, *args, **kwargs):
        return fn(a, *args, **kwargs)

    _fn = register_decomposition(getattr(aten, inplace_name))(_fn)
    return _fn


def _create_meta(func):
    def _fn(x):
        return x

    register_meta(func)(_fn)
    return _fn


@register_decomposition(aten.abs)
def abs(a):
    return register_decomposition(aten.neg)(a)


abs_ = _make_inplace(abs)
sqrt_meta = _create_meta(aten.sqrt)
"""


def _read(source: str, path: str = REFS) -> tuple[set[str], list[tuple[str, str]]]:
    tree = ast.parse(source)
    symbols, aliases = module_symbols(tree, source), namespace_aliases(tree)
    registered = [(op, fn) for op, fn, _how, _line in registrations_in(path, symbols, aliases)]
    return inferring_factories(symbols, aliases), registered


def test_a_factory_registering_under_an_op_it_computes_registers_what_it_builds() -> None:
    factories, registered = _read(SOURCE)
    assert factories == {"_make_inplace"}
    assert ("abs_", "abs_") in registered
    # the op a function is registered for by its decorator, and nothing it builds
    assert ("abs", "abs") in registered
    assert not [fn for _op, fn in registered if fn == "sqrt_meta"]


def test_a_factory_imported_from_another_module_is_resolved_later_with_the_op() -> None:
    """`celu_ = _make_inplace(celu)` in `torch/_refs/nn/functional`: pending until the
    explorer knows `_make_inplace` is a factory of `torch/_refs`; the op is the name, not
    prefixed with the module as `get_aten_op` prefixes a decorated function's."""
    source = "from torch._refs import _make_inplace\n\n\ndef celu(a):\n    return a\n\n\ncelu_ = _make_inplace(celu)\n"
    path = "torch/_refs/nn/functional/__init__.py"
    tree = ast.parse(source)
    pending = pending_factory_calls(path, module_symbols(tree, source), namespace_aliases(tree))
    assert [(fn, chain, op) for fn, chain, _how, _line, op in pending] == [
        ("celu_", ("_make_inplace",), "celu_")
    ]
