"""Run one (op, dtype) pair's samples through the paths its test templates exercise.

Imports torch. Shared by the recorder (which watches what executes) and the ground-truth
runner (which digests what comes out), so both see exactly the same work. Each unit of work
is a `Step` (path, sample index, thunk); the caller runs the thunks, in order, and decides what
to do with results and exceptions. Paths:

- OpInfo: `eager` (the op over its first `max_samples` reference inputs, which start with its
  sample inputs), `method`, `inplace` (on a copy) and `out` (into fresh tensors shaped like
  the eager result) where the OpInfo has them, `backward` (torch.autograd.grad against seeded
  cotangents) when it supports autograd and the dtype is in its backward dtypes, `compile`
  (torch.compile with the device's backend over the first `compile_samples` samples, through
  backward too when backward applies: `compile_backward`).
- ModuleInfo: `eager` (construct, move, forward), `backward` (gradients of inputs and
  parameters) for floating dtypes, `compile`/`compile_backward` likewise.
Every thunk starts from `torch.manual_seed(seed)`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from spyre_ci.deps import ALL_PATHS, FORWARD_COMPILE
from spyre_ci.deps.probes import adopt_on_backward


@dataclass(frozen=True)
class RunSettings:
    device: str  # torch._C._get_privateuse1_backend_name()
    compile_backend: str = "spyre"
    max_samples: int = 32
    compile_samples: int = 1
    seed: int = 0
    paths: tuple[str, ...] = ALL_PATHS


@dataclass(frozen=True)
class Step:
    path: str
    sample: int
    thunk: Callable[[], Any]


class UnknownEntry(LookupError):
    """No OpInfo/ModuleInfo of that name in the installed torch."""


def _clone(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def grad_leaves(tree: Any) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(tree)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]


def _cotangent(tensor: torch.Tensor, seed: int) -> torch.Tensor:
    # Drawn on the CPU from a private generator: the same on every device and every run.
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
    return values.to(dtype=tensor.dtype, device=tensor.device)


def gradients(outputs: Any, inputs: list[torch.Tensor], seed: int) -> tuple[Any, ...]:
    """d(outputs)/d(inputs) against seeded cotangents (None where an input is unused)."""
    results = [t for t in grad_leaves(outputs) if t.grad_fn is not None]
    if not results or not inputs:
        raise ValueError("no differentiable output")
    adopt_on_backward(results)
    cotangents = [_cotangent(t, seed + i) for i, t in enumerate(results)]
    return torch.autograd.grad(results, inputs, cotangents, allow_unused=True)


def seeded(seed: int, fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """`fn(*args)` after `torch.manual_seed(seed)` (which seeds the device's generator too)."""

    def run() -> Any:
        torch.manual_seed(seed)
        return fn(*args)

    return run


def _first(samples: Any, count: int, seed: int) -> list[Any]:
    torch.manual_seed(seed)
    return list(itertools.islice(iter(samples), count))


def _call(fn: Callable[..., Any], sample: Any, **extra: Any) -> Any:
    return fn(sample.input, *sample.args, **sample.kwargs, **extra)


def _fresh_like(value: Any) -> Any:
    return tree_map(
        lambda t: torch.empty_like(t) if isinstance(t, torch.Tensor) else t,
        value,
    )


def _out_call(op: Any, sample: Any) -> Any:
    expected = _call(op, sample)
    out = _fresh_like(expected)
    _call(op, sample, out=out)
    return out


def _inplace_call(fn: Callable[..., Any], sample: Any) -> Any:
    copy = sample.transform(_clone)
    return _call(fn, copy)


def _backward_call(op: Any, sample: Any, seed: int) -> Any:
    inputs = grad_leaves([sample.input, sample.args, sample.kwargs])
    return gradients(_call(op, sample), inputs, seed)


def _wants_backward(op: Any, dtype: torch.dtype, device: str) -> bool:
    return bool(op.supports_autograd) and dtype in op.supported_backward_dtypes(device)


def opinfo_steps(op: Any, dtype: torch.dtype, settings: RunSettings) -> Iterator[Step]:
    device, seed, count = settings.device, settings.seed, settings.max_samples
    wanted = settings.paths
    forward = _first(op.reference_inputs(device, dtype, requires_grad=False), count, seed)
    variants: list[tuple[str, Callable[..., Any] | None]] = [
        ("eager", op),
        ("method", op.method_variant),
        ("inplace", op.inplace_variant),
    ]
    for path, fn in variants:
        if fn is None or path not in wanted:
            continue
        for i, sample in enumerate(forward):
            call = _inplace_call if path == "inplace" else _call
            yield Step(path, i, seeded(seed, call, fn, sample))
    if op.supports_out and "out" in wanted:
        for i, sample in enumerate(forward):
            yield Step("out", i, seeded(seed, _out_call, op, sample))
    backward = _wants_backward(op, dtype, device)
    if backward and "backward" in wanted:
        grad_samples = _first(op.sample_inputs(device, dtype, requires_grad=True), count, seed)
        for i, sample in enumerate(grad_samples):
            yield Step("backward", i, seeded(seed, _backward_call, op, sample, seed))
    if "compile" in wanted:
        yield from _compiled_op_steps(op, dtype, settings, backward)
    if FORWARD_COMPILE in wanted:
        yield from _compiled_op_steps(op, dtype, settings, False, FORWARD_COMPILE)


def _compiled_op_steps(
    op: Any, dtype: torch.dtype, settings: RunSettings, backward: bool, path: str = "compile"
) -> Iterator[Step]:
    """The first samples through torch.compile; one fresh compilation per pair (so what a
    pair records does not depend on which pairs ran before it in the same process)."""
    device, seed = settings.device, settings.seed
    samples = _first(
        op.sample_inputs(device, dtype, requires_grad=backward), settings.compile_samples, seed
    )
    made: dict[str, Callable[..., Any]] = {}

    def compiled(*args: Any, **kwargs: Any) -> Any:
        # made by the first compile step, not while the steps are planned: building the
        # compiled wrapper belongs to the compiled path (worker.record_pair's windows)
        if "fn" not in made:
            torch._dynamo.reset()
            made["fn"] = torch.compile(
                lambda *a, **k: op(*a, **k), backend=settings.compile_backend
            )
        return made["fn"](*args, **kwargs)

    def afresh(*args: Any, **kwargs: Any) -> Any:
        # the forward-only probe compiles each sample anew: past Dynamo's recompile limit a
        # shared wrapper would run later samples eagerly, unseen by the trace
        made.clear()
        return compiled(*args, **kwargs)

    run = afresh if path == FORWARD_COMPILE else compiled
    for i, sample in enumerate(samples):
        kept: dict[str, Any] = {}
        yield Step(path, i, seeded(seed, _keep, kept, _call, run, sample))
        if backward and "out" in kept:  # the caller has run the step above by now
            inputs = grad_leaves([sample.input, sample.args, sample.kwargs])
            yield Step("compile_backward", i, seeded(seed, grad_of_kept, kept, inputs, seed))


def _keep(kept: dict[str, Any], fn: Callable[..., Any], *args: Any) -> Any:
    """Run `fn` and keep its result for a later step (the backward through it)."""
    kept["out"] = fn(*args)
    return kept["out"]


def grad_of_kept(kept: dict[str, Any], inputs: list[torch.Tensor], seed: int) -> Any:
    return gradients(kept["out"], inputs, seed)


def steps_for(
    database: str, entry: Any, dtype: torch.dtype, settings: RunSettings
) -> Iterator[Step]:
    if database == "moduleinfo":
        from spyre_ci.deps.modules import moduleinfo_steps

        return moduleinfo_steps(entry, dtype, settings)
    return opinfo_steps(entry, dtype, settings)
