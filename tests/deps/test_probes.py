"""What a pair executes, seen on the real reference device (in this process)."""

from __future__ import annotations

import copy
import gc
import threading
import weakref
from collections.abc import Callable
from types import FunctionType

import pytest
import torch

import torch_spyre_ref  # noqa: F401  (registers the device)
from spyre_ci.deps import ALL_PATHS
from spyre_ci.deps.execute import Entries
from spyre_ci.deps.paths import RunSettings
from spyre_ci.deps.probes import PythonCalls, adopt_on_backward, aten_ops, python_calls
from spyre_ci.deps.symbols import SymbolResolver
from spyre_ci.deps.worker import record_pair, torch_root


class _Doubling(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        threads.add(threading.get_ident())
        return grad * 2


threads: set[int] = set()


def test_python_backward_on_the_autograd_thread_is_seen() -> None:
    x = torch.ones(3, device="spyre", requires_grad=True)
    calls = PythonCalls()
    with python_calls(calls):
        y = _Doubling.apply(x)
        adopt_on_backward([y])
        y.sum().backward()
    assert threads and threading.get_ident() not in threads  # backward ran elsewhere
    qualnames = {key[2] for key in calls.code_keys()}
    assert "_Doubling.backward" in qualnames


class _RunsOnBackward(torch.autograd.Function):
    """Calls `on_backward["fn"]` on the autograd thread."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        on_backward.pop("fn", lambda: None)()
        return grad * 2


on_backward: dict[str, Callable[[], object]] = {}
finalized: list[str] = []


def _finalizer_ran() -> None:
    finalized.append("ran")


def _backward_under(calls: PythonCalls) -> None:
    x = torch.ones(3, device="spyre", requires_grad=True)
    with python_calls(calls):
        y = _RunsOnBackward.apply(x)
        adopt_on_backward([y])
        y.sum().backward()


def test_what_an_earlier_collection_held_is_freed_before_the_next_one_profiles() -> None:
    """A thread's profiler keeps the code objects it saw (an earlier pair's compiled frames):
    freed when the next pair adopts the thread, their finalizers (Dynamo's CleanupHook) ran
    under the new profiler, so 79 OpInfo pairs credited CleanupHook to their eager paths."""
    namespace: dict[str, object] = {}
    exec("def fresh():\n    return 1\n", namespace)  # a code object only `earlier` will hold
    fresh = namespace.pop("fresh")
    assert isinstance(fresh, FunctionType)
    weakref.finalize(fresh.__code__, _finalizer_ran)
    on_backward["fn"] = fresh
    earlier = PythonCalls()
    _backward_under(earlier)
    assert "fresh" in {key[2] for key in earlier.code_keys()}
    del fresh, earlier, namespace
    gc.collect()
    assert not finalized  # the autograd thread's profiler still holds the code object
    later = PythonCalls()
    _backward_under(later)
    assert finalized == ["ran"]
    assert "_finalizer_ran" not in {key[2] for key in later.code_keys()}


def test_composite_implicit_ops_are_seen_with_overloads() -> None:
    seen: set[str] = set()
    x = torch.ones(2, 3, device="spyre", requires_grad=True)
    with aten_ops(seen):
        torch.nn.functional.linear(x, torch.ones(4, 3, device="spyre")).sum().backward()
    assert "linear" in seen  # CompositeImplicitAutograd: never reaches the backend itself
    assert "mm" in seen or "addmm" in seen
    assert "sum" in seen or "sum.dim_IntList" in seen
    assert not any(name.startswith("aten::") for name in seen)


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, object]]:
    # torch.compile is covered by test_record_cli.py (a cold compile costs seconds)
    eager_paths = tuple(p for p in ALL_PATHS if "compile" not in p)
    settings = RunSettings(device="spyre", max_samples=2, paths=eager_paths)
    entries, resolver = Entries(), SymbolResolver(torch_root())
    pairs = [("opinfo", "nn.functional.silu", "float32"), ("opinfo", "add", "float32"),
             ("opinfo", "no.such.op", "float32")]  # fmt: skip
    return {p[1]: record_pair(entries, p, settings, resolver) for p in pairs}


def test_a_pair_records_its_python_front_end_and_aten_ops(
    recorded: dict[str, dict[str, object]],
) -> None:
    silu, add = recorded["nn.functional.silu"], recorded["add"]
    assert silu["status"] == add["status"] == "ok"
    assert "torch/nn/functional.py::silu" in silu["functions"]  # type: ignore[operator]
    assert "torch/nn/functional.py::silu" not in add["functions"]  # type: ignore[operator]
    assert {"silu", "silu_backward"} <= set(silu["aten"])  # type: ignore[call-overload]
    assert {"add.Tensor", "add.out", "add_.Tensor"} <= set(add["aten"])  # type: ignore[call-overload]
    # the sample input function is a dependency too
    assert any(
        f.startswith("torch/testing/_internal/") and "sample_inputs" in f
        for f in add["functions"]  # type: ignore[attr-defined]
    )


def test_a_pair_that_cannot_run_is_recorded_with_its_status(
    recorded: dict[str, dict[str, object]],
) -> None:
    row = recorded["no.such.op"]
    assert (
        row["status"] == "UnknownEntry: no opinfo entry 'no.such.op' in torch " + torch.__version__
    )
    assert row["aten"] == row["functions"] == []


def test_what_only_torch_compile_runs_is_recorded_apart_from_the_eager_paths() -> None:
    """Building the compiled wrapper, Dynamo and the backend are the compiled path's: a
    change there reaches only instances that trace, never every test of the pair. And the
    backward through the compiled forward runs (it is planned once that forward ran)."""
    settings = RunSettings(device="spyre", max_samples=1, compile_samples=1)
    row = record_pair(
        Entries(), ("opinfo", "mul", "float32"), settings, SymbolResolver(torch_root())
    )
    assert row["status"] == "ok"
    functions, compiled = set(row["functions"]), set(row["compiled_functions"])
    assert "torch/__init__.py::_TorchCompileWrapper.__init__" in compiled
    assert not any(f.startswith("torch/_dynamo/convert_frame.py") for f in functions)
    assert any(f.startswith("torch/_dynamo/convert_frame.py") for f in compiled)
    # one sample per path: eager, method, in-place, out=, backward, compile and the
    # backward through the compiled forward
    assert row["steps"] == 7


class _Frame:
    cycle: object


def _neg_after_the_collector_ran(x: torch.Tensor) -> torch.Tensor:
    gc.collect()  # as the collector may, in the middle of a pair
    return torch.neg(x)


def test_garbage_an_earlier_pair_left_is_credited_to_no_pair() -> None:
    """A compiled frame of an earlier pair, freed by the cycle collector, runs Dynamo's
    `CleanupHook`. Left to the collector's timing it ran in some later pair's eager window
    (768 tests of 2.13 -> 2.14 showed it as run by their eager paths)."""
    from torch._dynamo.utils import CleanupHook

    neg = copy.copy(Entries().find("opinfo", "neg"))
    neg.op = _neg_after_the_collector_ran
    entries, resolver = Entries(_ops={"neg": neg}), SymbolResolver(torch_root())
    settings = RunSettings(device="spyre", max_samples=1, paths=("eager",))
    scope: dict[str, object] = {}
    frame = _Frame()
    frame.cycle = frame  # only the cycle collector frees it
    weakref.finalize(frame, CleanupHook.create(scope, "__compiled_fn_0", 1))
    gc.collect()  # it has lived through collections: old, as an earlier pair's frame is
    del frame
    try:
        row = record_pair(entries, ("opinfo", "neg", "float32"), settings, resolver)
    finally:
        gc.unfreeze()
    assert row["status"] == "ok" and row["steps"] == 1
    assert "torch/_dynamo/utils.py::CleanupHook.__call__" not in row["functions"]
    gc.collect()
    assert scope == {}  # freed once everything is collected


def test_a_module_pairs_fresh_compilation_belongs_to_its_compiled_paths() -> None:
    """Resetting Dynamo frees earlier pairs' compiled frames: it is the compiled path's
    set-up, never something a `test_modules` template that does not compile runs."""
    settings = RunSettings(device="spyre", max_samples=1, compile_samples=1)
    row = record_pair(
        Entries(), ("moduleinfo", "nn.ReLU", "float32"), settings, SymbolResolver(torch_root())
    )
    assert row["status"] == "ok"
    assert "torch/_dynamo/__init__.py::reset" not in row["functions"]
    assert "torch/_dynamo/__init__.py::reset" in row["compiled_functions"]
