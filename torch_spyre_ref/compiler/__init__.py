"""The ``spyre`` torch.compile backend (``torch.compile(fn, backend="spyre")``).

The backend is also declared as a ``torch_dynamo_backends`` entry point; importing this package
registers it directly as well, for environments whose package metadata is stale.
"""

from torch_spyre_ref.compiler.adapters import ADAPTERS, Adapter, apply_adapters
from torch_spyre_ref.compiler.backend import COMPILE_LOG, CompiledGraph, register, spyre_backend
from torch_spyre_ref.compiler.scratchpad import SCRATCHPAD_BYTES, ScratchpadDiagnostic, diagnose

register()

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
