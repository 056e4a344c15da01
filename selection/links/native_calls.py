"""Link kind `native-call`: the ATen ops an op's C++ kernel calls, read from the release's
library. Pure.

A wheel has no C++ source, but `torch/lib/libtorch_cpu.so` holds the compiled kernels with
their symbols (selection.sources.elf, selection.cpp.binary_calls). `avg_pool1d` has no kernel
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

Where the calls come from (`KernelCode`, one contract, two readers):
- a release (release mode, or a `--diff` onto one): its wheel's library, read by
  selection.cpp.binary_calls (`BinaryCode`). It cannot tell calls through function pointers
  and virtual calls (dispatch stubs, TensorIterator loops); inlined helpers' op calls count
  for the caller, which is right, and so do those of the op API's wrappers GCC emits out of
  line (`at::convolution_symint`);
- a clone (range and PR modes): the C++ source of `aten/src/ATen/native/` and
  FunctionsManual.cpp, read by selection.cpp.source_calls (`SourceCode`): `at::f(...)` and
  `x.f(...)` calls of an op's API, in the kernel and in the helpers of its file it calls,
  with the fewest arguments they pass (`Step.arguments`: a changed schema default past them
  does not reach through the edge; the library's calls pass an unknown count, and an older
  source's recorded count, `Step.older_arguments`, makes such a default a doubt, not a use).
An overloaded kernel name counts every overload's calls; the graph's nodes are ops by base
name, so a call of any overload links the op.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from selection.cpp.native_index import IMPLICIT_KEY, FormulaIndex, NativeIndex
from selection.links.base import Step, fewest_arguments

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
NOTE_PREFIX = "C++ calls between ops"  # every note on them starts so (the report shows it)
META_FUNC = "Meta (structured)"  # a TORCH_META_FUNC: the kernel is the meta's name

# The modules whose code decides the edges: their cached results are keyed by these sources.
# Every module one of them imports at module level is one of them (a test checks it).
# Those of a release's library (selection.sources.native_binary keys its cache on them too).
BINARY_DECIDERS = (
    "selection.links.native_calls",
    "selection.links.base",
    "selection.cpp.native_index",
    "selection.native_yaml",
    "selection.devices",
    "selection.model",
    "selection.cpp.binary_calls",
    "selection.sources.elf",
    "selection.sources.elf_file",
)
DECIDERS = (
    *BINARY_DECIDERS,
    # a clone's C++ source, and the C++ reader it goes through
    "selection.cpp.source_calls",
    "selection.cpp.corpus",
    "selection.cpp.items",
    "selection.cpp.paths",
    "selection.cpp.reader",
    "selection.cpp.scan",
    "selection.cpp.tokens",
    "selection.cpp.macros",
    "selection.cpp.declarators",
)

Calls = dict[str, tuple[tuple[str, Step], ...]]  # op (base) -> (called op (base), evidence)


@dataclass(frozen=True)
class Called:
    op: str  # the op called: an overload (`squeeze.dim`) or a base name (`squeeze`)
    api: str  # how: `at::_ops::squeeze_dim::call`, `at::squeeze(`, `.squeeze(`
    via: tuple[str, ...] = ()  # the helpers between the definition and the call
    # the fewest arguments any of its calls pass, receiver counted (Step.arguments); None:
    # not known (a library's compiled call holds every argument, the defaults filled in)
    arguments: int | None = None

    def fewest(self, other: Called) -> Called:
        """This call, passing what it and `other` pass at least (`fewest_arguments`)."""
        return replace(self, arguments=fewest_arguments(self.arguments, other.arguments))


@dataclass(frozen=True)
class Definition:
    path: str  # where it is: the library, or the C++ file
    symbol: str  # `at::native::avg_pool1d`
    calls: tuple[Called, ...]


class KernelCode(Protocol):
    """The C++ a native_functions.yaml kernel name or a formula helper name stands for."""

    source: str  # what was read, for the run's notes

    def kernel(self, kernel: str, key: str) -> list[Definition]:
        """The definitions of a kernel (`key` tells a TORCH_META_FUNC, META_FUNC, from the
        rest), with the ops each calls."""
        ...

    def helper(self, name: str) -> list[Definition]:
        """The definitions of a function a derivatives.yaml formula calls that is no op."""
        ...


@dataclass(frozen=True)
class NativeCalls:
    source: str  # what was read: "torch/lib/libtorch_cpu.so of torch 2.13.0"
    kernels: Calls  # kind native-call
    formulas: Calls  # kind derivative: through a formula's C++ helpers
    kernels_read: int  # kernel definitions found (each once)
    helpers_read: int  # formula helpers found
    # where the steps' `older_arguments` come from (selection.cpp.recorded_arguments)
    arguments_from: str = ""

    def describe(self) -> str:
        edges = sum(len(v) for v in self.kernels.values())
        grads = sum(len(v) for v in self.formulas.values())
        return (
            f"{NOTE_PREFIX} from {self.source}: {self.kernels_read} composite and "
            f"meta kernels calling {edges} ops, {self.helpers_read} derivative helpers "
            f"calling {grads}"
        )


def native_call_uses(
    code: KernelCode, native: NativeIndex, formulas: FormulaIndex, ops: Collection[str]
) -> NativeCalls:
    """The edges, over the ops of native_functions.yaml (`ops`: overloads or base names)."""
    bases = {op.split(".", 1)[0] for op in ops}
    kernels: dict[str, dict[str, Step]] = {}
    read: set[tuple[str, str]] = set()  # a kernel serving two keys is one kernel read
    for kernel, key, users in _traced_kernels(native):
        for definition in code.kernel(kernel, key):
            read.add((definition.path, definition.symbol))
            for call in definition.calls:
                for user in users:
                    how = f"{key} kernel of {user} calls {call.api}{_through(call)}"
                    step = Step(definition.path, definition.symbol, how, call.arguments)
                    _add(kernels, user, call.op, bases, step)
    grads, helpers = _formula_helper_calls(code, formulas, bases)
    return NativeCalls(code.source, _frozen(kernels), _frozen(grads), len(read), helpers)


def _traced_kernels(native: NativeIndex) -> Iterable[tuple[str, str, list[str]]]:
    """(kernel name, key, the overloads it serves) for the kernels a traced op runs."""
    for kernel, uses in native.kernels.items():
        by_key: dict[str, list[str]] = {}
        for use in uses:
            if use.key in TRACED_KEYS:
                by_key.setdefault(use.key, []).append(use.op)
        for key, users in by_key.items():
            yield kernel, key, users
    for meta, uses in native.metas.items():
        yield meta, META_FUNC, [use.op for use in uses]


def _formula_helper_calls(
    code: KernelCode, formulas: FormulaIndex, bases: set[str]
) -> tuple[dict[str, dict[str, Step]], int]:
    found: dict[str, dict[str, Step]] = {}
    helpers = 0
    for helper, users in formulas.calls.items():
        if helper.removesuffix("_symint") in bases:
            continue  # an op: the derivative link kind's own edge
        for definition in code.helper(helper):
            helpers += 1
            for call in definition.calls:
                for user in users:
                    how = (
                        f"its backward formula calls {helper} ({definition.path}: "
                        f"{definition.symbol} calls {call.api}{_through(call)})"
                    )
                    step = Step(formulas.path, user, how, call.arguments)
                    _add(found, user, call.op, bases, step)
    return found, helpers


def _through(call: Called) -> str:
    return f" through {' -> '.join(call.via)}" if call.via else ""


def _add(
    table: dict[str, dict[str, Step]], user: str, called: str, bases: set[str], step: Step
) -> None:
    """One step per (user, called op): the first found, with the fewest arguments any of
    the calls it stands for passes (unknown when one of them is not known)."""
    base, called_base = user.split(".", 1)[0], called.split(".", 1)[0]
    if base == called_base or called_base not in bases:
        return
    steps = table.setdefault(base, {})
    first = steps.setdefault(called_base, step)
    if first is not step:
        steps[called_base] = replace(
            first, arguments=fewest_arguments(first.arguments, step.arguments)
        )


def _frozen(table: dict[str, dict[str, Step]]) -> Calls:
    return {op: tuple(sorted(called.items())) for op, called in sorted(table.items())}
