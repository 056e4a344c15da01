"""Packages summarized as one node each: big subsystems of torch/ that op tests reach only
through a few entry points (torch.compile, FakeTensor, export, ...). Pure.

Parsing them symbol by symbol would cost most of the analysis for little precision: a
change anywhere in a subsystem reaches whatever reaches the subsystem, and is covered by a
canary aimed at those tests. Another device's packages (torch/cuda, torch/mps, ...) are
not listed: they are analysed symbol by symbol, and what code that runs here calls or
imports of them (`torch.cuda.is_available()`, their module-level code run by `import torch`)
is linked like any library code; the rest has no effect here (selection.links.symbol_changes).
"""

from __future__ import annotations

from selection.devices import names_other_device

SUBSYSTEMS = (
    # the Python side of the dispatcher and of __torch_function__: every op call goes
    # through them, so symbol-level links would reach everything
    "torch/_ops.py",
    "torch/_dispatch",
    "torch/overrides.py",
    "torch/library.py",
    "torch/_guards.py",
    "torch/_compile.py",
    "torch/_dynamo",
    "torch/_inductor",
    "torch/_functorch",
    "torch/_subclasses",
    "torch/_higher_order_ops",
    "torch/_export",
    "torch/export",
    "torch/fx",
    "torch/jit",
    "torch/onnx",
    "torch/distributed",
    "torch/ao",
    "torch/quantization",
    "torch/optim",
    "torch/distributions",
    "torch/nested",
    "torch/package",
    "torch/profiler",
    "torch/compiler",
    "torch/_library",
    "torch/_logging",
    "torch/_lazy",
    "torch/_numpy",
    "torch/_vendor",
    "torch/_strobelight",
    "torch/utils/data",
    "torch/utils/benchmark",
    "torch/utils/tensorboard",
    "torch/utils/_sympy",
    "torch/testing/_internal/distributed",
    "torch/testing/_internal/optests",
    "torch/testing/_internal/generated",
    "torch/testing/_internal/codegen",
    "torch/testing/_internal/test_module",
)


def subsystem_of(path: str) -> str | None:
    for prefix in SUBSYSTEMS:
        if path == prefix or path.startswith(prefix + "/"):
            return prefix
    return None


def is_other_device_package(path: str) -> bool:
    """`torch/cuda/...`, `torch/mps/...`: a device's own top-level package of torch. Not
    `torch/backends/cudnn` (library code on every device reads its flags) nor a module
    merely named so (common_cuda.py): those are analysed symbol by symbol."""
    parts = path.split("/")
    return len(parts) > 2 and parts[0] == "torch" and names_other_device(parts[1])
