"""Per-operator plans derived once from an operator's schema: how the fallback must treat it."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

# Ops that may legitimately see tensors of both devices (transfers; CPU index tensors).
CROSS_DEVICE_OPS = frozenset(
    {
        "aten::copy_",
        "aten::_copy_from",
        "aten::_copy_from_and_resize",
        "aten::_to_copy",
        "aten::index",
        "aten::index_put_",
        "aten::index_put",
        "aten::_index_put_impl_",
        "aten::set_",
    }
)

# Ops that only change a tensor's metadata and must act on the spyre tensor itself: running them
# on a temporary CPU view would update the view and leave the caller's tensor unchanged.
_METADATA_OPS = frozenset({"aten::set_", "aten::_set_storage_offset"})


class Kind(enum.Enum):
    COMPUTE = "compute"  # run the CPU kernel on zero-copy CPU views
    METADATA = "metadata"  # views and in-place views: run the device-generic CPU kernel as is


@dataclass(frozen=True)
class OpPlan:
    name: str  # e.g. "aten::add"
    overload: str  # e.g. "Tensor"
    kind: Kind
    # For each return: the name of the argument it aliases, or None for a fresh tensor.
    return_aliases: tuple[str | None, ...]
    positions: dict[str, int]  # argument name -> position in the schema
    cross_device: bool
    generator_arg: str | None
    # Keyword-only arguments the op writes (``out=``): kernels may resize them, which a CPU view
    # of device memory cannot do, so they get CPU scratch tensors copied back afterwards.
    out_args: tuple[str, ...] = ()
    # Positions of positional arguments the op writes (``self`` of an in-place op): a caller
    # that substitutes arguments must keep these, or the write lands in the substitute.
    written_positions: frozenset[int] = frozenset()
    # Positions of Tensor-typed arguments: the boxed fallback hands wrapped numbers (``x + 2``)
    # to Python as plain numbers, which the Tensor overload would then reject.
    tensor_positions: tuple[int, ...] = ()


def plan_for(op: torch._ops.OpOverload) -> OpPlan:
    schema = op._schema
    by_alias_set: dict[str, str] = {}
    for argument in schema.arguments:
        if argument.alias_info is not None:
            for alias_set in argument.alias_info.before_set:
                by_alias_set.setdefault(alias_set, argument.name)
    aliases: list[str | None] = []
    returns_view = False
    for ret in schema.returns:
        info = ret.alias_info
        if info is None or not info.before_set:
            aliases.append(None)
            continue
        aliases.append(by_alias_set.get(next(iter(info.before_set))))
        returns_view = returns_view or not info.is_write
    metadata = returns_view or torch.Tag.inplace_view in op.tags or schema.name in _METADATA_OPS
    generator = next((a.name for a in schema.arguments if a.name == "generator"), None)
    return OpPlan(
        name=schema.name,
        overload=schema.overload_name,
        kind=Kind.METADATA if metadata else Kind.COMPUTE,
        return_aliases=tuple(aliases),
        positions={a.name: i for i, a in enumerate(schema.arguments)},
        cross_device=schema.name in CROSS_DEVICE_OPS,
        generator_arg=generator,
        tensor_positions=tuple(
            i for i, a in enumerate(schema.arguments) if str(a.type) == "Tensor"
        ),
        out_args=tuple(
            a.name
            for a in schema.arguments
            if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write
        ),
        written_positions=frozenset(
            i
            for i, a in enumerate(schema.arguments)
            if not a.kwarg_only and a.alias_info is not None and a.alias_info.is_write
        ),
    )
