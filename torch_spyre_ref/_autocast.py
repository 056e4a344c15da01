"""Autocast policy for spyre (PyTorch registers none for PrivateUse1): matmul-class ops run in
the autocast dtype, numerically sensitive reductions in float32, everything else falls through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

LOWER_PRECISION = (
    "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "matmul", "linear",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "prelu",
)  # fmt: skip
FLOAT32 = ("softmax", "log_softmax", "layer_norm", "group_norm", "rms_norm", "mse_loss")
_EXCLUDE = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)  # type: ignore[attr-defined]


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != dtype:
        return value.to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _kernel(op: Any, target: torch.dtype | None) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        dtype = target or torch.get_autocast_dtype("spyre")
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            args = tuple(_cast(a, dtype) for a in args)
            kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return run


def register(lib: torch.library.Library) -> None:
    for names, target in ((LOWER_PRECISION, None), (FLOAT32, torch.float32)):
        for name in names:
            packet = getattr(torch.ops.aten, name)
            for overload in packet.overloads():
                op = getattr(packet, overload)
                qualified = name if overload == "default" else f"{name}.{overload}"
                lib.impl(qualified, _kernel(op, target), "AutocastPrivateUse1")
