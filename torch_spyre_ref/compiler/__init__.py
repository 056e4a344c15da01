"""The ``spyre`` torch.compile backend (``torch.compile(fn, backend="spyre")``)."""

from torch_spyre_ref.compiler.adapters import ADAPTERS, Adapter, apply_adapters
from torch_spyre_ref.compiler.backend import COMPILE_LOG, CompiledGraph, register, spyre_backend
from torch_spyre_ref.compiler.scratchpad import SCRATCHPAD_BYTES, ScratchpadDiagnostic, diagnose

__all__ = [
    "ADAPTERS",
    "COMPILE_LOG",
    "SCRATCHPAD_BYTES",
    "Adapter",
    "CompiledGraph",
    "ScratchpadDiagnostic",
    "apply_adapters",
    "diagnose",
    "register",
    "spyre_backend",
]
