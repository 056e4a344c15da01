"""How a recorded map answers "which pairs ran this function": nested functions, and the
warm-up's names kept apart by path (what the compiler's lazy imports ran serves only the
pairs where a test compiles)."""

from __future__ import annotations

from selection.observed import ObservedMap
from spyre_ci.deps.worker import _after_warmup

PRIMS = "torch/_prims/__init__.py"
ADD = ("opinfo", "_refs.add", "float32")
MUL = ("opinfo", "mul", "float32")
SUB = ("opinfo", "sub", "float32")


def _map() -> ObservedMap:
    observed = ObservedMap(torch_version="2.13.0", device="spyre")
    observed.add(ADD, [], [f"{PRIMS}::_make_prim.<locals>._prim_impl"])
    observed.add(MUL, [], [f"{PRIMS}::_make_prim.<locals>._autograd_impl.<locals>.g"])
    observed.add(SUB, [], [f"{PRIMS}::_make_prim_helper"])
    return observed


def test_a_function_reaches_the_pairs_that_ran_what_it_defines() -> None:
    """An edit of `_make_prim`'s own body changes every closure it builds."""
    assert _map().pairs_running_function(PRIMS, "_make_prim") == {ADD, MUL}


def test_a_nested_function_reaches_only_the_pairs_that_ran_it() -> None:
    observed = _map()
    assert observed.pairs_running_function(PRIMS, "_make_prim.<locals>._prim_impl") == {ADD}
    assert observed.pairs_running_function(PRIMS, "_make_prim.<locals>._autograd_impl") == {MUL}
    # a name that merely starts the same is another function
    assert observed.pairs_running_function(PRIMS, "_make_prim_helper") == {SUB}


def test_names_added_after_a_lookup_are_seen() -> None:
    observed = _map()
    assert observed.pairs_running_function(PRIMS, "_make_prim") == {ADD, MUL}
    observed.add_runs("functions", f"{PRIMS}::_make_prim.<locals>._backend_select_impl", [SUB])
    assert observed.pairs_running_function(PRIMS, "_make_prim") == {ADD, MUL, SUB}


def test_what_the_warm_up_compiled_serves_only_compiled_lookups() -> None:
    observed = _map()
    observed.add_baseline(
        {
            "functions": ["torch/_refs/__init__.py::abs"],
            "compiled_functions": [f"{PRIMS}::_make_prim"],
        }
    )
    every = {ADD, MUL, SUB}
    assert observed.pairs_running_function("torch/_refs/__init__.py", "abs") == every
    assert observed.pairs_running_function(PRIMS, "_make_prim", compiled=True) == every
    # eager: only the pairs that ran its closures, not every pair of the map
    assert observed.pairs_running_function(PRIMS, "_make_prim") == {ADD, MUL}


def test_a_closure_the_warm_up_ran_serves_every_pair_for_its_factory() -> None:
    observed = _map()
    nested = "_make_prim.<locals>._prim_impl"
    assert observed.pairs_running_function(PRIMS, "_make_prim", compiled=True) == set()
    observed.add_baseline({"compiled_functions": [f"{PRIMS}::{nested}"]})  # after a lookup
    assert observed.pairs_running_function(PRIMS, "_make_prim", compiled=True) == {ADD, MUL, SUB}
    assert observed.pairs_running_function(PRIMS, "_make_prim", True, nested=False) == set()


def test_the_warm_up_keeps_what_only_its_compiled_paths_ran_apart() -> None:
    def row(**lists: list[str]) -> dict[str, list[str]]:
        empty: dict[str, list[str]] = {
            k: [] for k in ("aten", "functions", "compiled_aten", "compiled_functions")
        }
        return empty | lists

    first = row(
        aten=["add.Tensor", "_to_copy"],
        functions=["torch/_refs/__init__.py::add", "torch/_tensor.py::<module>"],
        compiled_aten=["mm"],
        compiled_functions=["torch/_inductor/ir.py::<module>", "torch/_dynamo/x.py::f"],
    )
    second = row(
        aten=["add.Tensor"],
        functions=["torch/_refs/__init__.py::add"],
        compiled_functions=["torch/_dynamo/x.py::f"],
    )
    baseline = _after_warmup(first, second)["baseline"]
    assert baseline == {
        "aten": ["_to_copy"],
        "functions": ["torch/_tensor.py::<module>"],
        "compiled_aten": ["mm"],
        "compiled_functions": ["torch/_inductor/ir.py::<module>"],
    }
