"""Which ATen ops a C++ function of a release library calls through the dispatcher. Pure.

The graph (selection.sources.elf reads it) has one node per function of the library, named by
its mangled symbol, plus one per imported symbol (PLT stub); an edge is a direct call.
A call through the dispatcher is a call of `at::_ops::<op>::call` (or `::redispatch`),
where `<op>` is the overload with `.` spelled `_` (`at::_ops::squeeze_dim::call` is
`squeeze.dim`): what `at::squeeze(t, 1)` and `t.squeeze(1)` compile to once inlined.

From a kernel, helpers are followed up to `MAX_DEPTH` calls deep, but only in ATen's own
namespaces (`HELPER_NAMESPACES`: `at::native`, `at::meta`, the generated per-key wrappers,
anonymous namespaces, the autograd formulas' helpers): TensorIterator, c10 and the standard
library call no ops of their own worth a link, and following them would join unrelated
kernels through shared utilities; nor quantized tensors' helpers, from a kernel not of their
own (`is_quantized_only`). The op API's inline wrappers, which GCC sometimes emits
out of line (Functions.h's `at::convolution_symint`, TensorBody.h's `at::Tensor::select`), are
transparent: a call of a function of `at::` or `at::Tensor` that itself calls
`at::_ops::<op>::call` counts as a call of that op, at no depth (`CallGraph.wrapped_ops`);
without that, `at::native::conv2d_symint` would not reach `convolution`.

No numpy here (it is not a core dependency): only building the graph, in
`CallGraph.from_edges` for selection.sources.elf, needs it.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from selection.devices import identifier_words
from selection.links.native_calls import META_FUNC, Called, Definition

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAX_DEPTH = 3
MAX_VISITED = 400  # functions visited from one root: bounds a pathological call tree
HELPER_NAMESPACES: tuple[tuple[str, ...], ...] = (
    ("at", "native"),
    ("at", "meta"),
    ("at", "_GLOBAL__N_1"),
    ("at", "compositeimplicitautograd"),
    ("at", "compositeexplicitautograd"),
    ("at", "compositeexplicitautogradnonfunctional"),
    ("torch", "autograd", "generated", "details"),
)
# where the op API's wrappers live: at::<op>, at::<op>_symint, at::<op>_out(f), at::Tensor::<op>
WRAPPER_SCOPES: tuple[tuple[str, ...], ...] = (("at",), ("at", "Tensor"))
_LENGTH = re.compile(rb"\d+")
_QUALIFIERS = b"rVKL"  # cv-qualifiers and GCC's internal-linkage marker before a name


def qualified_name(mangled: bytes) -> tuple[str, ...]:
    """The leading name components of an Itanium-mangled symbol, up to its first template
    argument list, constructor, substitution or parameter list:
    `_ZN2at6native10avg_pool1dERKNS_6TensorE...` -> ("at", "native", "avg_pool1d");
    `_ZL6helperv` -> ("helper",); a C name (`memcpy`) -> ("memcpy",)."""
    if not mangled.startswith(b"_Z"):
        return (mangled.decode(errors="replace"),)
    nested = mangled.startswith(b"_ZN")
    at = 3 if nested else 2
    parts: list[str] = []
    while at < len(mangled):
        if mangled[at] in _QUALIFIERS:
            at += 1
            continue
        found = _LENGTH.match(mangled, at)
        if found is None:
            break
        length, at = int(found.group()), found.end()
        parts.append(mangled[at : at + length].decode(errors="replace"))
        at += length
        if not nested:
            break
    return tuple(parts)


def op_struct(name: tuple[str, ...]) -> str | None:
    """`at::_ops::<struct>::call` / `::redispatch` -> the struct (`squeeze_dim`), else None."""
    if len(name) == 4 and name[:2] == ("at", "_ops") and name[3] in ("call", "redispatch"):
        return name[2]
    return None


def is_helper(name: tuple[str, ...]) -> bool:
    return any(name[: len(space)] == space for space in HELPER_NAMESPACES)


# Words naming quantized tensors' own machinery: a `Quantizer`, a `QTensorImpl`, a kernel of
# the quantized layout. Not `quantize`: fake quantization computes on float tensors, and
# `quantize_per_tensor`'s helpers run for the dense input it is given.
QUANTIZED_WORDS = frozenset({"quantized", "quantizer", "qtensor", "qtensorimpl"})


def is_quantized_only(name: tuple[str, ...]) -> bool:
    """A helper only a quantized tensor runs (`create_subtensor_quantizer`, which
    `select_symint` calls under `self.is_quantized()`; `quantized_copy_from_float_`,
    `copy_`'s branch for a quantized destination). A dense op test makes no quantized tensor
    (the `QuantizedCPU` kernels are filtered by their key, selection.devices), so what such a
    helper calls is no call of the dense kernel that holds the branch: following it made
    `select` call `slice`, `item` and `to`, and every indexing test reach them."""
    return bool(name) and any(w in QUANTIZED_WORDS for w in identifier_words(name[-1]))


def is_wrapper_name(name: tuple[str, ...]) -> bool:
    """`at::convolution_symint`, `at::Tensor::select`: where the op API's wrappers are."""
    return len(name) >= 2 and name[:-1] in WRAPPER_SCOPES


@dataclass
class CallGraph:
    """Functions (then imported symbols) by id, and the direct calls between them (CSR)."""

    source: str
    names: list[bytes]  # mangled, by id
    offsets: npt.NDArray[np.int64]  # callees of id i: targets[offsets[i]:offsets[i + 1]]
    targets: npt.NDArray[np.int64]
    functions: int  # ids below are defined here; from it on, imports (PLT stubs)
    _qualified: dict[int, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _by_name: dict[tuple[str, ...], list[int]] | None = field(default=None, repr=False)
    _by_mangled: dict[bytes, list[int]] | None = field(default=None, repr=False)
    _wrapped: dict[int, tuple[str, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_edges(
        cls,
        source: str,
        names: list[bytes],
        callers: npt.NDArray[np.int64],
        callees: npt.NDArray[np.int64],
        functions: int,
    ) -> CallGraph:
        import numpy as np

        order = np.argsort(callers, kind="stable")
        callers, callees = callers[order], callees[order]
        offsets = np.searchsorted(callers, np.arange(len(names) + 1)).astype(np.int64)
        return cls(source, names, offsets, callees.astype(np.int64), functions)

    @property
    def edges(self) -> int:
        return len(self.targets)

    def qualified(self, node: int) -> tuple[str, ...]:
        found = self._qualified.get(node)
        if found is None:
            found = self._qualified[node] = qualified_name(self.names[node])
        return found

    def defined(self, name: tuple[str, ...]) -> list[int]:
        """The functions of this qualified name (every overload, every `.cold`/`.isra`
        clone), among ATen's helper namespaces."""
        if self._by_name is None:
            index: dict[tuple[str, ...], list[int]] = {}
            for node in range(self.functions):
                if self.names[node].startswith((b"_ZN2at", b"_ZN5torch8autograd")):
                    qualified = self.qualified(node)
                    if is_helper(qualified):
                        index.setdefault(qualified, []).append(node)
            self._by_name = index
        return self._by_name.get(name, [])

    def helper_names(self) -> list[tuple[str, ...]]:
        """The qualified names of the functions in ATen's helper namespaces."""
        self.defined(())
        return list(self._by_name or ())

    def callees(self, node: int) -> Iterable[int]:
        """What `node` calls; a call of an import resolves to this library's definitions of
        that exact symbol (a call of an exported function goes through the PLT)."""
        for target in self.targets[self.offsets[node] : self.offsets[node + 1]].tolist():
            if target < self.functions:
                yield target
                continue
            local = self._mangled().get(self.names[target])
            if local:
                yield from local
            else:
                yield target

    def wrapped_ops(self, node: int) -> tuple[str, ...]:
        """The `at::_ops` structs `node` calls directly if it is an op-API wrapper (a function
        of `at::` or `at::Tensor`: `at::convolution_symint` calls
        `at::_ops::convolution::call`); () for any other function."""
        found = self._wrapped.get(node)
        if found is None:
            found = ()
            if node < self.functions and is_wrapper_name(self.qualified(node)):
                structs = (op_struct(self.qualified(c)) for c in self.callees(node))
                found = tuple(dict.fromkeys(s for s in structs if s is not None))
            self._wrapped[node] = found
        return found

    def _mangled(self) -> dict[bytes, list[int]]:
        if self._by_mangled is None:
            index: dict[bytes, list[int]] = {}
            for node in range(self.functions):
                index.setdefault(self.names[node], []).append(node)
            self._by_mangled = index
        return self._by_mangled


class OpCall(NamedTuple):  # a tuple: a library's ~15,000 of them pickle small
    struct: str  # at::_ops struct: "avg_pool2d", "squeeze_dim"
    via: tuple[str, ...]  # the helpers between the root and the call ("" components joined)


def ops_called(graph: CallGraph, roots: Sequence[int]) -> list[OpCall]:
    """The ops `roots` (one C++ function's definitions) call, directly, through the op API's
    wrappers or through helpers of ATen's namespaces at most MAX_DEPTH calls deep, each with
    the shortest helper chain (a root's own clones, `.cold` parts, are not helpers of the
    chain; a wrapper is no helper of it either). A helper of quantized tensors is followed
    only from a root of their own (`is_quantized_only`)."""
    own = {graph.qualified(root) for root in roots}
    quantized_roots = any(is_quantized_only(name) for name in own)
    found: dict[str, OpCall] = {}
    seen = set(roots)
    queue: deque[tuple[int, tuple[str, ...]]] = deque((root, ()) for root in roots)
    visited = 0
    while queue and visited < MAX_VISITED:
        node, via = queue.popleft()
        visited += 1
        for callee in graph.callees(node):
            name = graph.qualified(callee)
            struct = op_struct(name)
            if struct is not None:
                found.setdefault(struct, OpCall(struct, via))
                continue
            wrapped = graph.wrapped_ops(callee)
            for op in wrapped:  # an op-API wrapper: its ops, at no depth
                found.setdefault(op, OpCall(op, via))
            if (
                not wrapped
                and callee not in seen
                and len(via) < MAX_DEPTH
                and is_helper(name)
                and (quantized_roots or not is_quantized_only(name))
            ):
                seen.add(callee)
                queue.append((callee, via if name in own else (*via, "::".join(name))))
    return list(found.values())


FORMULA_HELPERS = (("torch", "autograd", "generated", "details"), ("at", "native"))


def is_kernel_or_helper(name: tuple[str, ...]) -> bool:
    """What BinaryCode may look up: a kernel `at::native::k`, a structured kernel
    `at::native::structured_k::impl`, a TORCH_META_FUNC `at::meta::structured_m::meta`, a
    formula helper `torch::autograd::generated::details::h` (or `at::native::h`)."""
    if len(name) == 3:
        return name[:2] == ("at", "native")
    if len(name) == 4 and name[2].startswith("structured_"):
        return (name[0], name[1], name[3]) in (("at", "native", "impl"), ("at", "meta", "meta"))
    return len(name) == 5 and name[:4] == FORMULA_HELPERS[0]


@dataclass(frozen=True)
class LibraryCalls:
    """The ops each function of a library that may be a kernel or a formula helper calls
    (those calling none included): the part of the analysis that depends on the library
    alone, kept per wheel while native_functions.yaml changes (selection.sources.native_binary)."""

    source: str  # what was read: `torch-2.13.0-....whl:torch/lib/libtorch_cpu.so`
    calls: dict[str, tuple[OpCall, ...]]  # `at::native::avg_pool1d` -> what it calls


def library_calls(graph: CallGraph) -> LibraryCalls:
    names = [name for name in graph.helper_names() if is_kernel_or_helper(name)]
    return LibraryCalls(
        graph.source,
        {"::".join(name): tuple(ops_called(graph, graph.defined(name))) for name in names},
    )


class BinaryCode:
    """`KernelCode` (selection.links.native_calls) over what a release library's functions
    call (`LibraryCalls`): a kernel `k` is `at::native::k` or the structured
    `at::native::structured_k::impl`, a TORCH_META_FUNC `add.Tensor` is
    `at::meta::structured_add_Tensor::meta`, a formula helper lives in
    `torch::autograd::generated::details` (FunctionsManual) or `at::native`. Each definition
    is built once, however many keys or formulas ask for it."""

    def __init__(self, library: LibraryCalls, ops: Iterable[str], source: str, path: str) -> None:
        self.library, self.source, self.path = library, source, path
        # `at::_ops` struct -> overload: `squeeze_dim` -> `squeeze.dim`, `add__Tensor` -> `add_.Tensor`
        self.structs = {op.replace(".", "_"): op for op in ops}
        self._definitions: dict[str, Definition | None] = {}

    def kernel(self, kernel: str, key: str) -> list[Definition]:
        names: list[tuple[str, ...]]
        if key == META_FUNC:
            names = [("at", "meta", f"structured_{kernel.replace('.', '_')}", "meta")]
        else:
            names = [("at", "native", kernel), ("at", "native", f"structured_{kernel}", "impl")]
        return [d for name in names if (d := self._definition(name)) is not None]

    def helper(self, name: str) -> list[Definition]:
        for space in FORMULA_HELPERS:
            found = self._definition((*space, name))
            if found is not None:
                return [found]
        return []

    def _definition(self, name: tuple[str, ...]) -> Definition | None:
        symbol = "::".join(name)
        if symbol not in self._definitions:
            self._definitions[symbol] = self._build(symbol)
        return self._definitions[symbol]

    def _build(self, symbol: str) -> Definition | None:
        found = self.library.calls.get(symbol)
        if found is None:
            return None
        calls = [
            Called(self.structs[c.struct], f"at::_ops::{c.struct}::call", c.via)
            for c in found
            if c.struct in self.structs
        ]
        return Definition(self.path, symbol, tuple(calls))
