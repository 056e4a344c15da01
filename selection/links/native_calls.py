"""Link kind `native-call`: the ATen ops an op's C++ kernel calls, read from the release's
library. Pure.

A wheel has no C++ source, but `torch/lib/libtorch_cpu.so` holds the compiled kernels with
their symbols (selection.cpp.elf, selection.cpp.binary_calls). `avg_pool1d` has no kernel
of its own in native_functions.yaml: its `CompositeImplicitAutograd` kernel
`at::native::avg_pool1d` calls `at::_ops::avg_pool2d::call`, so tracing avg_pool1d runs
avg_pool2d's meta kernel and decomposition. This edge, aten::avg_pool1d -> aten::avg_pool2d,
lets a change to `meta_avg_pool2d` reach the avg_pool1d OpInfo.

Which kernels count: those that run where Python kernels of other ops can run, that is when
the op is traced (compiled, FakeTensor, meta): the composite kernels (`CompositeImplicit-
Autograd`, decomposed at trace time; `CompositeExplicitAutograd(NonFunctional)`, which also
serve the Meta key) and the `Meta` kernels, C++ `TORCH_META_FUNC`s included. A CPU kernel's
calls run eagerly, in C++ only: no Python kernel runs there. The same holds for helpers a
derivatives.yaml formula calls that are not ops (`pow_backward`, in FunctionsManual.cpp):
the ops they call are edges of kind `derivative` (gradient-only), as the formula's own calls
of ops are.

What the library cannot tell: calls through function pointers and virtual calls (dispatch
stubs, TensorIterator loops) and inlined helpers (their op calls count for the caller, which
is right). An overloaded kernel name counts every overload's calls.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from selection.cpp.binary_calls import CallGraph, OpCall, ops_called
from selection.cpp.native_index import IMPLICIT_KEY, FormulaIndex, NativeIndex
from selection.links.base import Step

KIND = "native-call"
LIBRARY = "torch/lib/libtorch_cpu.so"
TRACED_KEYS = frozenset(
    {
        IMPLICIT_KEY,
        "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional",
        "Meta",
    }
)
FORMULA_HELPERS = (("torch", "autograd", "generated", "details"), ("at", "native"))

Calls = dict[str, tuple[tuple[str, Step], ...]]  # op (base) -> (called op (base), evidence)


@dataclass(frozen=True)
class NativeCalls:
    source: str  # what was read: "torch/lib/libtorch_cpu.so of torch 2.13.0 (wheel ...)"
    kernels: Calls  # kind native-call
    formulas: Calls  # kind derivative: through a formula's C++ helpers
    kernels_read: int  # kernels found in the library
    helpers_read: int  # formula helpers found in the library

    def describe(self) -> str:
        edges = sum(len(v) for v in self.kernels.values())
        grads = sum(len(v) for v in self.formulas.values())
        return (
            f"C++ calls between ops from {self.source}: {self.kernels_read} composite and "
            f"meta kernels calling {edges} ops, {self.helpers_read} derivative helpers "
            f"calling {grads}"
        )


def op_structs(overloads: Iterable[str]) -> dict[str, str]:
    """`at::_ops` struct name -> overload (`squeeze_dim` -> `squeeze.dim`, `add__Tensor` ->
    `add_.Tensor`), over native_functions.yaml's overloads."""
    return {overload.replace(".", "_"): overload for overload in overloads}


def _kernel_symbols(kernel: str, key: str) -> list[tuple[str, ...]]:
    """Where torchgen's conventions put a kernel named in native_functions.yaml."""
    if key == "Meta (structured)":
        return [("at", "meta", f"structured_{kernel}", "meta")]
    return [("at", "native", kernel), ("at", "native", f"structured_{kernel}", "impl")]


def native_call_uses(
    graph: CallGraph,
    native: NativeIndex,
    formulas: FormulaIndex,
    overloads: Collection[str],
    source: str,
) -> NativeCalls:
    structs = op_structs(overloads)
    kernels: dict[str, dict[str, Step]] = {}
    read = 0
    for kernel, key, ops in _traced_kernels(native):
        for symbol in _kernel_symbols(kernel, key):
            nodes = graph.defined(symbol)
            if not nodes:
                continue
            read += 1
            name = "::".join(symbol)
            for call in ops_called(graph, nodes):
                called = structs.get(call.struct)
                if called is None:
                    continue
                for op in ops:
                    how = f"{key} kernel of {op} calls {_api(call)}{_through(call)}"
                    _add(kernels, op, called, Step(LIBRARY, name, how))
    grads, helpers = _formula_helper_calls(graph, formulas, structs, set(overloads))
    return NativeCalls(source, _frozen(kernels), _frozen(grads), read, helpers)


def _traced_kernels(native: NativeIndex) -> Iterable[tuple[str, str, list[str]]]:
    """(kernel name, key, the overloads it serves) for the kernels a traced op runs."""
    for kernel, uses in native.kernels.items():
        by_key: dict[str, list[str]] = {}
        for use in uses:
            if use.key in TRACED_KEYS:
                by_key.setdefault(use.key, []).append(use.op)
        for key, ops in by_key.items():
            yield kernel, key, ops
    for meta, uses in native.metas.items():
        yield meta.replace(".", "_"), "Meta (structured)", [use.op for use in uses]


def _formula_helper_calls(
    graph: CallGraph, formulas: FormulaIndex, structs: dict[str, str], ops: set[str]
) -> tuple[dict[str, dict[str, Step]], int]:
    found: dict[str, dict[str, Step]] = {}
    helpers = 0
    bases = {op.split(".", 1)[0] for op in ops}
    for helper, users in formulas.calls.items():
        if helper in bases or helper.removesuffix("_symint") in bases:
            continue  # an op: the derivative link kind's own edge
        for space in FORMULA_HELPERS:
            nodes = graph.defined((*space, helper))
            if not nodes:
                continue
            helpers += 1
            symbol = "::".join((*space, helper))
            for call in ops_called(graph, nodes):
                called = structs.get(call.struct)
                if called is None:
                    continue
                for user in users:
                    how = (
                        f"its backward formula calls {helper} ({LIBRARY}: {symbol} calls "
                        f"{_api(call)}{_through(call)})"
                    )
                    _add(found, user, called, Step(formulas.path, user, how))
            break
    return found, helpers


def _api(call: OpCall) -> str:
    return f"at::_ops::{call.struct}::call"


def _through(call: OpCall) -> str:
    return f" through {' -> '.join(call.via)}" if call.via else ""


def _add(table: dict[str, dict[str, Step]], user: str, called: str, step: Step) -> None:
    base, called_base = user.split(".", 1)[0], called.split(".", 1)[0]
    if base != called_base:
        table.setdefault(base, {}).setdefault(called_base, step)


def _frozen(table: dict[str, dict[str, Step]]) -> Calls:
    return {op: tuple(sorted(called.items())) for op, called in sorted(table.items())}
