"""Scratchpad diagnostics: graph nodes whose working set exceeds the device's scratchpads.

Spyre has 32 cores with a private 2 MiB scratchpad each (64 MiB in all) and no shared cache.
A node whose inputs and output, laid out in 128-byte sticks, do not fit in the scratchpads of
all cores must be tiled (or spill to device memory); we report such nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx

from torch_spyre_ref.device import CORES, SCRATCHPAD_BYTES_PER_CORE
from torch_spyre_ref.stick import layout_for

SCRATCHPAD_BYTES = CORES * SCRATCHPAD_BYTES_PER_CORE


@dataclass(frozen=True)
class ScratchpadDiagnostic:
    node: str
    target: str
    working_set_bytes: int
    limit_bytes: int

    def __str__(self) -> str:
        return (
            f"{self.node} ({self.target}) needs {self.working_set_bytes} bytes of scratchpad, "
            f"more than {self.limit_bytes} ({CORES} cores x {SCRATCHPAD_BYTES_PER_CORE} bytes)"
        )


def _size_hint(size: Any) -> int | None:
    if isinstance(size, int):
        return size
    hint = getattr(getattr(size, "node", None), "hint", None)
    return int(hint) if hint is not None else None


def _padded_bytes(value: Any) -> int:
    if not isinstance(value, torch.Tensor):
        return 0
    sizes = [_size_hint(s) for s in value.shape]
    if any(s is None for s in sizes):
        return 0
    return layout_for([s for s in sizes if s is not None], value.element_size()).padded_bytes


def _tensors(value: Any) -> Iterator[Any]:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    else:
        yield value


def _node_bytes(node: fx.Node) -> int:
    total = sum(_padded_bytes(v) for v in _tensors(node.meta.get("val")))
    for arg in node.all_input_nodes:
        total += sum(_padded_bytes(v) for v in _tensors(arg.meta.get("val")))
    return total


def diagnose(gm: fx.GraphModule, limit: int = SCRATCHPAD_BYTES) -> list[ScratchpadDiagnostic]:
    found: list[ScratchpadDiagnostic] = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        needed = _node_bytes(node)
        if needed > limit:
            found.append(ScratchpadDiagnostic(node.name, str(node.target), needed, limit))
    return found
