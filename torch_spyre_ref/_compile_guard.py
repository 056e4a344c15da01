"""``torch.compile`` with its default backend (Inductor) on spyre tensors: refused at once.

Inductor generates C++/Triton kernels for devices it has a code generator for; it has none for
the emulated spyre device and failed deep in its code generation with ``KeyError: 'spyre'``
after lowering the whole graph. The device's own backend is ``torch.compile(fn,
backend="spyre")`` (torch_spyre_ref.compiler). When Inductor is handed a graph whose inputs or
values live on spyre, it is stopped before it starts, with a message naming that backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

MESSAGE = (
    "torch.compile's default backend (Inductor) cannot compile for the spyre device: use "
    'torch.compile(fn, backend="spyre"), the reference device\'s backend (adapters, scratchpad '
    "diagnostics, ATen graphs run on spyre; docs/device.md)"
)


class SpyreNeedsSpyreBackend(RuntimeError):
    """Inductor was asked to compile a graph on spyre tensors."""


def _on_spyre(values: Iterable[Any]) -> bool:
    return any(isinstance(v, torch.Tensor) and v.device.type == "spyre" for v in values)


def graph_uses_spyre(graph_module: Any, example_inputs: Iterable[Any]) -> bool:
    """Whether an input, or a value the graph creates (``torch.ones(..., device="spyre")``),
    is a spyre tensor (dynamo records each node's fake value in ``meta``)."""
    if _on_spyre(example_inputs):
        return True
    nodes = getattr(getattr(graph_module, "graph", None), "nodes", ())
    return _on_spyre(node.meta.get("example_value", node.meta.get("val")) for node in nodes)


_inductor = torch._TorchCompileInductorWrapper
_original_call = _inductor.__call__


def _call(self: Any, model_: Any, inputs_: Any, *args: Any, **kwargs: Any) -> Any:
    if graph_uses_spyre(model_, inputs_):
        raise SpyreNeedsSpyreBackend(MESSAGE)
    return _original_call(self, model_, inputs_, *args, **kwargs)


def install() -> None:
    if _inductor.__call__ is _original_call:
        _inductor.__call__ = _call  # type: ignore[method-assign]
