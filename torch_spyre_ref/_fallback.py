"""The boxed fallback: every ATen op without a spyre kernel runs its CPU kernel on CPU views.

Spyre tensors own host memory, so a CPU view of each spyre argument is free (see ``_dlpack``).
Results that alias an argument are mapped back to that argument; fresh results are copied into
device allocations so that memory statistics and stick padding stay true.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from torch_spyre_ref import _mode, _strict
from torch_spyre_ref._allocator import allocate_with_view, storage_bytes
from torch_spyre_ref._dlpack import cpu_view
from torch_spyre_ref._plans import Kind, OpPlan, plan_for

DEVICE_TYPE = "spyre"
CPU_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_CPU = torch.device("cpu")
# spyre:0 by its backend's original name (this module is imported before the rename);
# comparing devices costs a third of reading `device.type`, on every argument of every op
_SPYRE = torch.device("privateuseone", 0)
_PLANS: dict[torch._ops.OpOverload, OpPlan] = {}


class _Conversion:
    """What converting one call's arguments saw: devices, for the mixing check."""

    __slots__ = ("saw_cpu", "saw_spyre")

    def __init__(self) -> None:
        self.saw_spyre = False
        self.saw_cpu = False

    def value(self, x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            if x.is_cpu:
                if x.dim() > 0:
                    self.saw_cpu = True
                return x
            if x.device == _SPYRE:
                self.saw_spyre = True
                return cpu_view(x)
            return x
        if isinstance(x, (list, tuple)) and x and any(isinstance(e, torch.Tensor) for e in x):
            return type(x)([self.value(e) for e in x])
        if isinstance(x, torch.device) and x.type == DEVICE_TYPE:
            return _CPU
        return x


def _plan(op: torch._ops.OpOverload) -> OpPlan:
    plan = _PLANS.get(op)
    if plan is None:
        plan = _PLANS[op] = plan_for(op)
    return plan


def spyre_fallback(keyset: Any, op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """The PrivateUse1 boxed fallback (registered with ``with_keyset=True``)."""
    plan = _plan(op)
    if plan.kind is Kind.METADATA:
        return op.redispatch(CPU_KEYSET, *args, **kwargs)
    return run_on_cpu(op, plan, args, kwargs)


def run_on_cpu(
    op: torch._ops.OpOverload, plan: OpPlan, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    conversion = _Conversion()
    value = conversion.value
    cpu_args = tuple([value(a) for a in args])
    cpu_kwargs = {k: value(v) for k, v in kwargs.items()} if kwargs else {}
    if conversion.saw_spyre and conversion.saw_cpu and not plan.cross_device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"spyre:0 and cpu! (when checking arguments for {plan.name})"
        )
    scratch = _out_scratch(plan, kwargs, cpu_kwargs) if plan.out_args else []
    if plan.generator_arg is not None:
        _device_generator(plan, args, kwargs, cpu_kwargs)
    if plan.out_args and not scratch:
        try:
            result = _run(op, plan, cpu_args, cpu_kwargs)
        except RuntimeError as error:
            if "not resizable" not in str(error):
                raise
            result = _rerun_growing_outs(op, plan, kwargs, cpu_args, cpu_kwargs)
        else:
            _adopt_out_geometry(plan, kwargs, cpu_kwargs)
    else:
        result = _run(op, plan, cpu_args, cpu_kwargs)
    for original, cpu_out in scratch:
        _copy_back(original, cpu_out)
    return _wrap_results(plan, result, args, kwargs)


def _run(
    op: torch._ops.OpOverload, plan: OpPlan, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    if _mode.strict_active():
        return _strict.run(op, plan, args, kwargs, _call)
    return _call(op, plan, args, kwargs)


def _device_generator(
    plan: OpPlan, args: tuple[Any, ...], kwargs: dict[str, Any], cpu_kwargs: dict[str, Any]
) -> None:
    """Random ops draw from the device generator. A generator passed by the caller is a CPU one
    (no ``torch.Generator(device="spyre")`` can exist without a C++ hooks object): reject it as
    other devices reject a generator of the wrong device type."""
    name = plan.generator_arg
    assert name is not None
    given = kwargs.get(name)
    position = plan.positions[name]
    if given is None and position < len(args):
        given = args[position]
    if given is not None:
        raise RuntimeError(
            f"Expected a 'spyre' device type for generator but found '{given.device.type}' "
            f"(in {plan.name}): the spyre device has no torch.Generator objects (a pure-Python "
            "backend cannot create them); omit generator= and seed the device generator with "
            "torch.spyre.manual_seed or torch.manual_seed"
        )
    cpu_kwargs[name] = _mode.generator()


def _call(
    op: torch._ops.OpOverload, plan: OpPlan, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Run the CPU kernel. The boxed fallback hands wrapped numbers (``x + 2``) to Python as
    plain numbers, which the Tensor overload rejects: then let overload resolution pick the
    Scalar overload, which wraps the number as upstream does."""
    if _has_number_for_tensor(plan, args):
        return op.overloadpacket(*args, **kwargs)
    return op._op(*args, **kwargs)  # the C++ operator itself: OpOverload.__call__ only forwards


def _has_number_for_tensor(plan: OpPlan, args: tuple[Any, ...]) -> bool:
    count = len(args)
    for i in plan.tensor_positions:
        if i < count and isinstance(args[i], (bool, int, float, complex)):
            return True
    return False


def _out_scratch(
    plan: OpPlan, kwargs: dict[str, Any], cpu_kwargs: dict[str, Any]
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """CPU tensors for the ``out=`` arguments. A non-empty device ``out`` usually has the result's
    shape already (structured kernels allocate it so), and then its zero-copy CPU view (made by
    the conversion) is kept (``_adopt_out_geometry``, ``_rerun_growing_outs``); an empty one is
    about to be resized, so it gets a scratch tensor."""
    pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
    for name in plan.out_args:
        if _needs_scratch(kwargs.get(name)):
            break
    else:
        return pairs
    for name in plan.out_args:
        value = kwargs.get(name)
        outs = value if isinstance(value, (list, tuple)) else [value]
        scratch: list[Any] = []
        for out in outs:
            if isinstance(out, torch.Tensor) and not out.is_cpu:
                cpu_out = torch.empty_strided(out.shape, out.stride(), dtype=out.dtype)
                pairs.append((out, cpu_out))
                scratch.append(cpu_out)
            else:
                scratch.append(out)
        cpu_kwargs[name] = type(value)(scratch) if isinstance(value, (list, tuple)) else scratch[0]
    return pairs


def _adopt_out_geometry(plan: OpPlan, kwargs: dict[str, Any], cpu_kwargs: dict[str, Any]) -> None:
    """The kernel may have resized an ``out``'s CPU view within its storage (an ``out`` of another
    shape, large enough): the data is in place, as on CPU; the device tensor takes the geometry."""
    for name in plan.out_args:
        out, view = kwargs.get(name), cpu_kwargs.get(name)
        if isinstance(out, torch.Tensor):
            if isinstance(view, torch.Tensor) and _geometry_differs(out, view):
                out.as_strided_(view.shape, view.stride(), out.storage_offset())
        elif isinstance(out, (list, tuple)):
            for one, one_view in zip(out, cpu_kwargs[name], strict=True):
                if isinstance(one, torch.Tensor) and _geometry_differs(one, one_view):
                    one.as_strided_(one_view.shape, one_view.stride(), one.storage_offset())


class _OutSlot:
    """One device ``out`` tensor and the CPU tensor the kernel writes (a view or a scratch)."""

    __slots__ = ("cpu", "out", "scratch")

    def __init__(self, out: torch.Tensor, cpu: torch.Tensor) -> None:
        self.out, self.cpu, self.scratch = out, cpu, False

    def prepare_retry(self) -> None:
        """The attempt failed because some ``out`` could not grow its CPU view. The kernel set the
        sizes of the views it resized (giving upstream's warning) before the storage check: give
        such an ``out`` a view of the new geometry over the whole device storage when it fits
        (written in place, as on CPU), else an empty scratch tensor; both take the result without
        a second warning. Views it did not resize stay as they are."""
        if self.scratch or not _geometry_differs(self.out, self.cpu):
            return
        shape, stride = self.cpu.shape, self.cpu.stride()
        out = self.out
        capacity = out.untyped_storage().nbytes() // out.element_size() - out.storage_offset()
        if out.is_conj() or out.is_neg() or storage_bytes(shape, stride, 1) > capacity:
            self.cpu, self.scratch = torch.empty(0, dtype=out.dtype), True
            return
        whole = torch.ops.aten.as_strided.default(out, (capacity,), (1,), out.storage_offset())
        self.cpu = cpu_view(whole).as_strided(shape, stride, 0)

    def finish(self) -> None:
        if self.scratch:
            _copy_back(self.out, self.cpu)
        elif _geometry_differs(self.out, self.cpu):
            self.out.as_strided_(self.cpu.shape, self.cpu.stride(), self.out.storage_offset())


def _rerun_growing_outs(
    op: torch._ops.OpOverload,
    plan: OpPlan,
    kwargs: dict[str, Any],
    cpu_args: tuple[Any, ...],
    cpu_kwargs: dict[str, Any],
) -> Any:
    """Rerun after a "not resizable" failure until every ``out`` has room (each failure resizes
    one more view, so this ends), then give the device tensors their geometry and data."""
    slots: dict[str, list[_OutSlot]] = {}
    for name in plan.out_args:
        value, cpu = kwargs.get(name), cpu_kwargs.get(name)
        outs = value if isinstance(value, (list, tuple)) else [value]
        cpus = cpu if isinstance(cpu, (list, tuple)) else [cpu]
        slots[name] = [
            _OutSlot(o, c)
            for o, c in zip(outs, cpus, strict=True)
            if isinstance(o, torch.Tensor) and not o.is_cpu
        ]
    every = [slot for group in slots.values() for slot in group]
    for attempt in range(len(every) + 1):
        for slot in every:
            slot.prepare_retry()
        for name, group in slots.items():
            value = kwargs.get(name)
            if isinstance(value, (list, tuple)):
                cpu_kwargs[name] = type(value)(slot.cpu for slot in group)
            elif group:
                cpu_kwargs[name] = group[0].cpu
        try:
            result = _run(op, plan, cpu_args, cpu_kwargs)
            break
        except RuntimeError as error:
            if "not resizable" not in str(error) or attempt == len(every):
                raise
    for slot in every:
        slot.finish()
    return result


def _geometry_differs(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape != b.shape or a.stride() != b.stride()


def _needs_scratch(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return not value.is_cpu and value.numel() == 0
    if isinstance(value, (list, tuple)):
        return any(_needs_scratch(v) for v in value)
    return False


def _copy_back(original: torch.Tensor, cpu_out: torch.Tensor) -> None:
    """Move an ``out=`` result (possibly resized or restrided by the kernel) into the device
    tensor, growing its storage through the device allocator when needed."""
    if cpu_out.shape != original.shape or cpu_out.stride() != original.stride():
        elements = storage_bytes(cpu_out.shape, cpu_out.stride(), 1)
        original.resize_(max(elements, 0))  # grows the storage from the storage offset
        original.as_strided_(cpu_out.shape, cpu_out.stride(), original.storage_offset())
    if cpu_out.numel():
        cpu_view(original).copy_(cpu_out)


def _argument(plan: OpPlan, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[plan.positions[name]]


def _wrap_results(plan: OpPlan, result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if len(plan.return_aliases) == 1:
        return _wrap_one(plan, plan.return_aliases[0], result, args, kwargs)
    if isinstance(result, tuple):
        return tuple(
            _wrap_one(plan, alias, r, args, kwargs)
            for alias, r in zip(plan.return_aliases, result, strict=False)
        )
    return result


def _wrap_one(
    plan: OpPlan, alias: str | None, result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    if alias is not None:
        return _argument(plan, alias, args, kwargs)
    if isinstance(result, torch.Tensor):
        return to_device_copy(result)
    if isinstance(result, list):
        return [to_device_copy(r) if isinstance(r, torch.Tensor) else r for r in result]
    return result


def to_device_copy(cpu: torch.Tensor) -> torch.Tensor:
    """A fresh device allocation holding ``cpu``'s values with its sizes and strides."""
    if not cpu.is_cpu:
        return cpu
    if cpu.is_contiguous():
        out, host = allocate_with_view(cpu.shape, (), cpu.dtype, contiguous=True)
    else:
        dense = _non_overlapping_dense(cpu)
        out, host = allocate_with_view(
            cpu.shape, cpu.stride() if dense else _contiguous_strides(cpu.shape), cpu.dtype
        )
    if cpu.numel():
        host.copy_(cpu)
    return out


def _non_overlapping_dense(t: torch.Tensor) -> bool:
    """Whether the strides are a permutation of dense ones (no gaps, no overlap)."""
    if t.is_contiguous():
        return True
    expected = 1
    for size, stride in sorted(zip(t.shape, t.stride(), strict=True), key=lambda p: p[1]):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides: list[int] = []
    running = 1
    for size in reversed(shape):
        strides.append(running)
        running *= max(size, 1)
    return tuple(reversed(strides))
