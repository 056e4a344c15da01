"""What the selection reads from the device's capability file (torch_spyre_ref/capabilities.yaml).

Through `test_manifests.capabilities.load_capabilities`, torch-free. Two facts are used:
the supported dtypes in the file's order (the primary dtype first: those run first), and the
ATen ops each supported op lowers to (`aten:`), so that a kernel change of `aten::pow` also
reaches `square`. When the file cannot be loaded the selection goes on with neither and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PRIMARY_DTYPES = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class DeviceFacts:
    primary_dtypes: tuple[str, ...] = DEFAULT_PRIMARY_DTYPES
    ops_by_aten: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Eager ops are traced and compiled on this device: Python decompositions and meta
    # kernels then run for every test (capability file `device.eager_ops: compiled`).
    eager_ops_compiled: bool = False
    source: str = ""
    problem: str = ""


def load_device_facts(path: Path | None = None) -> DeviceFacts:
    try:
        from test_manifests.capabilities import load_capabilities

        capabilities = load_capabilities(path)
    except Exception as exc:  # any loader/validation error: carry on without, and say so
        return DeviceFacts(problem=f"capability file not used: {str(exc).splitlines()[0][:200]}")
    by_aten: dict[str, list[str]] = {}
    for op in capabilities.ops:
        for aten in op.aten:
            by_aten.setdefault(aten, []).append(op.name)
    return DeviceFacts(
        primary_dtypes=tuple(capabilities.supported_dtypes()),
        ops_by_aten={k: tuple(v) for k, v in by_aten.items()},
        eager_ops_compiled=capabilities.device.eager_ops == "compiled",
        source=capabilities.source,
    )
