"""Which C++ paths the selection reads, and which cannot affect this device. Pure.

Areas:
- `native`: `aten/src/ATen/native/**`, the kernels; linked to ops through
  native_functions.yaml (selection.links.cpp).
- `autograd`: `torch/csrc/autograd/FunctionsManual.{cpp,h}`, the derivative helpers; linked
  to ops through derivatives.yaml formulas.
- `core`: the rest of `aten/src/ATen` and `c10` (TensorIterator, the dispatcher, vectorized
  math, ...): reached by nearly every op, so a change there is a canary cause, named as such.

A path under another device's directory (`native/cuda/`, `native/mps/`, `ATen/hip/`,
`native/mkldnn/xpu/`, ...) or with another device's suffix (`.cu`, `.mm`, `.metal`) is
"no effect" with that reason: a PrivateUse1 device runs the CPU kernels (docs/device.md).
Directories of other layouts (`sparse/`, `quantized/`, `nested/`, `mkldnn/`) are read like
the rest: their functions only reach ops through native_functions.yaml dispatch keys, and
those keys (`SparseCPU`, `QuantizedCPU`, `NestedTensorCPU`, `MkldnnCPU`) are filtered there,
while the CPU and composite kernels some of them define (`quantize_per_tensor`,
`mkldnn_convolution` under CPU convolution) still count.
"""

from __future__ import annotations

from dataclasses import dataclass

from selection.devices import names_other_device

NATIVE = "aten/src/ATen/native/"
FUNCTIONS_MANUAL = (
    "torch/csrc/autograd/FunctionsManual.cpp",
    "torch/csrc/autograd/FunctionsManual.h",
)
CORE_PREFIXES = ("aten/src/ATen/", "c10/")
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".inl")
DEVICE_SUFFIXES = {".cu": "CUDA", ".cuh": "CUDA", ".hip": "ROCm", ".mm": "MPS", ".metal": "MPS",
                   ".m": "MPS", ".glsl": "Vulkan", ".spv": "Vulkan"}  # fmt: skip
# Backends devices.py does not name (mobile and graphics APIs), as directory names.
OTHER_BACKEND_DIRS = frozenset({"vulkan", "metal", "nnapi", "mobile"})
NOT_LIBRARY_DIRS = frozenset({"test", "benchmark", "benchmarks"})


@dataclass(frozen=True)
class CppPath:
    path: str
    area: str  # native | autograd | core
    no_effect: str = ""  # why nothing here can affect this device, when nothing can


def classify_cpp(path: str) -> CppPath | None:
    """None for paths that are not ATen / c10 / FunctionsManual C++ (not read here)."""
    if path in FUNCTIONS_MANUAL:
        return CppPath(path, "autograd")
    if not path.startswith(CORE_PREFIXES):
        return None
    area = "native" if path.startswith(NATIVE) else "core"
    suffix = "." + path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
    if suffix in DEVICE_SUFFIXES:
        return CppPath(
            path, area, f"{DEVICE_SUFFIXES[suffix]} source ({suffix}): another device's code"
        )
    if suffix not in SOURCE_SUFFIXES:
        return None
    parts = path.split("/")[:-1]
    if any(part in NOT_LIBRARY_DIRS for part in parts):
        return CppPath(path, area, "C++ tests/benchmarks: not part of the library the device runs")
    device = next((p for p in parts if names_other_device(p) or p in OTHER_BACKEND_DIRS), "")
    if device:
        return CppPath(
            path,
            area,
            f"under {device}/: another device's code (a PrivateUse1 device runs the CPU kernels)",
        )
    return CppPath(path, area)
