"""The ``spyre`` torch.compile backend: AOTAutograd with core ATen decompositions, the device's
adapters, scratchpad diagnostics, and execution of the ATen graphs on spyre tensors."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import fx
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from torch_spyre_ref.compiler.adapters import apply_adapters
from torch_spyre_ref.compiler.scratchpad import ScratchpadDiagnostic, diagnose

log = logging.getLogger(__name__)


@dataclass
class CompiledGraph:
    """What the backend did to one forward or backward graph."""

    kind: str  # "forward" | "backward"
    adapters: list[str]
    diagnostics: list[ScratchpadDiagnostic]
    graph: fx.GraphModule


@dataclass
class CompileLog:
    graphs: list[CompiledGraph] = field(default_factory=list)

    def clear(self) -> None:
        self.graphs.clear()


COMPILE_LOG = CompileLog()


def _compiler(kind: str) -> Callable[[fx.GraphModule, list[Any]], Any]:
    def compile_graph(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
        applied = apply_adapters(gm)
        diagnostics = diagnose(gm)
        for diagnostic in diagnostics:
            log.info("spyre scratchpad: %s", diagnostic)
        COMPILE_LOG.graphs.append(CompiledGraph(kind, applied, diagnostics, gm))
        return make_boxed_func(gm.forward)

    return compile_graph


spyre_backend = aot_autograd(
    fw_compiler=_compiler("forward"),
    bw_compiler=_compiler("backward"),
    decompositions=core_aten_decompositions(),
)


def register() -> None:
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    if "spyre" not in _BACKENDS:
        register_backend(compiler_fn=spyre_backend, name="spyre")
