"""Strict mode: enforce the capability file on every computing op, and emulate fp16 compute.

Only ops that compute reach here (views and metadata ops are always allowed). An ATen op is
allowed when its base name (without ``aten::``, leading or trailing ``_``) is the last component
of a supported op's OpInfo name, appears in a supported op's ``aten`` list, or is listed under
``infrastructure_aten``. Errors name the op, the dtype and the capability entry at fault.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch

from test_manifests.capabilities import Capabilities, OpCapability
from torch_spyre_ref._plans import OpPlan
from torch_spyre_ref.capabilities import capabilities

_INFRASTRUCTURE = "infrastructure_aten"


def aten_base_name(qualified: str) -> str:
    return qualified.removeprefix("aten::").strip("_")


@functools.cache
def _index() -> dict[str, OpCapability | str]:
    caps = capabilities()
    index: dict[str, OpCapability | str] = {
        aten_base_name(n): _INFRASTRUCTURE for n in caps.infrastructure_aten
    }
    for op in caps.ops:
        for name in (op.base_name, *op.aten):
            index[aten_base_name(name)] = op
    return index


def _tensors(values: Any) -> Iterator[torch.Tensor]:
    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _tensors(value)


def _entry(caps: Capabilities, op: OpCapability) -> str:
    return f"{caps.source}: ops[{caps.ops.index(op)}] (name: {op.name})"


def check(plan: OpPlan, tensors: list[torch.Tensor]) -> OpCapability | None:
    """Raise if the capability file does not allow this call; return its op entry, if any."""
    caps = capabilities()
    qualified = f"{plan.name}.{plan.overload}" if plan.overload else plan.name
    entry = _index().get(aten_base_name(plan.name))
    if entry is None:
        raise NotImplementedError(
            f"spyre strict mode: {qualified} is not supported: no capability entry in "
            f"{caps.source} (ops[].name, ops[].aten or {_INFRASTRUCTURE})"
        )
    auxiliary = set(caps.dtypes.auxiliary)
    for tensor in tensors:
        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype in auxiliary:
            continue
        _check_dtype(caps, qualified, dtype, entry)
        if not isinstance(entry, str) and entry.limits is not None:
            _check_limits(caps, qualified, tensor, entry)
    return entry if not isinstance(entry, str) else None


def _check_dtype(
    caps: Capabilities, qualified: str, dtype: str, entry: OpCapability | str | None
) -> None:
    if dtype not in caps.supported_dtypes():
        unsupported = caps.unsupported_dtype(dtype)
        why = (
            f"dtypes.unsupported ({dtype}: {unsupported.reason})"
            if unsupported
            else ("dtypes.supported does not list it")
        )
        raise TypeError(
            f"spyre strict mode: {qualified} does not support dtype {dtype}: "
            f"capability entry {caps.source}: {why}"
        )
    if (
        entry is not None
        and not isinstance(entry, str)
        and entry.dtypes is not None
        and dtype not in entry.dtypes
    ):
        raise TypeError(
            f"spyre strict mode: {qualified} does not support dtype {dtype}: capability entry "
            f"{_entry(caps, entry)} lists dtypes {entry.dtypes}"
        )


def _check_limits(
    caps: Capabilities, qualified: str, tensor: torch.Tensor, entry: OpCapability
) -> None:
    limits = entry.limits
    assert limits is not None
    if limits.max_rank is not None and tensor.dim() > limits.max_rank:
        raise NotImplementedError(
            f"spyre strict mode: {qualified} on a rank-{tensor.dim()} {tensor.dtype} tensor "
            f"exceeds limits.max_rank={limits.max_rank} of capability entry {_entry(caps, entry)}"
        )
    if limits.max_numel is not None and tensor.numel() > limits.max_numel:
        raise NotImplementedError(
            f"spyre strict mode: {qualified} on {tensor.numel()} elements exceeds "
            f"limits.max_numel={limits.max_numel} of capability entry {_entry(caps, entry)}"
        )


def check_allocation(qualified: str, dtype: torch.dtype) -> None:
    """Factories and transfers allocate device memory: the dtype must be one the device has."""
    caps = capabilities()
    name = str(dtype).removeprefix("torch.")
    if name not in caps.dtypes.auxiliary:
        _check_dtype(caps, qualified, name, None)


def _round_through_fp16(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.to(torch.float16).to(torch.float32)
    if isinstance(value, (list, tuple)):
        return type(value)(_round_through_fp16(v) for v in value)
    return value


def _round_in_place(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        value.copy_(value.to(torch.float16))
    return value


def run(
    op: torch._ops.OpOverload,
    plan: OpPlan,
    cpu_args: tuple[Any, ...],
    cpu_kwargs: dict[str, Any],
    call: Callable[[torch._ops.OpOverload, OpPlan, tuple[Any, ...], dict[str, Any]], Any],
) -> Any:
    """Check the call against the capability file, then run it (matmul-class ops round float32
    operands and results through float16, like a float16-first device)."""
    entry = check(plan, list(_tensors((*cpu_args, *cpu_kwargs.values()))))
    if entry is None or not entry.matmul_class:
        return call(op, plan, cpu_args, cpu_kwargs)
    written = set(plan.out_args)
    # An argument the op writes in place (addmv_'s self) is rounded in place: a rounded copy
    # would take the write instead of the device memory.
    args = tuple(
        _round_in_place(a) if i in plan.written_positions else _round_through_fp16(a)
        for i, a in enumerate(cpu_args)
    )
    kwargs = {k: v if k in written else _round_through_fp16(v) for k, v in cpu_kwargs.items()}
    result = call(op, plan, args, kwargs)
    for tensor in _tensors(result if isinstance(result, (list, tuple)) else (result,)):
        if tensor.dtype == torch.float32:
            tensor.copy_(tensor.to(torch.float16))
    return result
