"""ModuleInfo entries through the paths of `spyre_ci.deps.paths` (as test_modules does:
construct on the CPU, move to the device and dtype, call forward). Imports torch."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import torch

from spyre_ci.deps.paths import RunSettings, Step, grad_leaves, grad_of_kept, gradients, seeded


def _inputs(info: Any, dtype: torch.dtype, settings: RunSettings, grad: bool) -> list[Any]:
    torch.manual_seed(settings.seed)
    inputs = info.module_inputs_func(
        info, device=settings.device, dtype=dtype, requires_grad=grad, training=True
    )
    usable = (i for i in inputs if i.forward_input is not None)
    return list(itertools.islice(usable, settings.max_samples))


def _build(info: Any, dtype: torch.dtype, device: str, module_input: Any) -> Any:
    constructor = module_input.constructor_input
    module = info.module_cls(*constructor.args, **constructor.kwargs)
    return module.to(device).to(dtype)


def _forward(module: Any, module_input: Any) -> Any:
    forward = module_input.forward_input
    return module(*forward.args, **forward.kwargs)


def _params_and_inputs(module: Any, module_input: Any) -> list[torch.Tensor]:
    forward = module_input.forward_input
    params = [p for p in module.parameters() if p.requires_grad]
    return params + grad_leaves([forward.args, forward.kwargs])


def moduleinfo_steps(info: Any, dtype: torch.dtype, settings: RunSettings) -> Iterator[Step]:
    device, seed, wanted = settings.device, settings.seed, settings.paths
    backward = dtype.is_floating_point
    if "eager" in wanted:
        for i, item in enumerate(_inputs(info, dtype, settings, grad=False)):
            yield Step("eager", i, seeded(seed, _eager, info, dtype, device, item))
    if backward and "backward" in wanted:
        for i, item in enumerate(_inputs(info, dtype, settings, grad=True)):
            yield Step("backward", i, seeded(seed, _backward, info, dtype, device, item, seed))
    if "compile" in wanted:
        yield from _compiled(info, dtype, settings, backward)


def _eager(info: Any, dtype: torch.dtype, device: str, item: Any) -> Any:
    return _forward(_build(info, dtype, device, item), item)


def _backward(info: Any, dtype: torch.dtype, device: str, item: Any, seed: int) -> Any:
    module = _build(info, dtype, device, item)
    return gradients(_forward(module, item), _params_and_inputs(module, item), seed)


def _compiled_forward(
    kept: dict[str, Any],
    info: Any,
    dtype: torch.dtype,
    settings: RunSettings,
    item: Any,
    first: bool,
) -> Any:
    if first:  # one fresh compilation per pair, inside the compiled path
        torch._dynamo.reset()
    kept["module"] = _build(info, dtype, settings.device, item)
    compiled = torch.compile(kept["module"], backend=settings.compile_backend)
    kept["out"] = _forward(compiled, item)
    return kept["out"]


def _compiled(
    info: Any, dtype: torch.dtype, settings: RunSettings, backward: bool
) -> Iterator[Step]:
    seed = settings.seed
    items = _inputs(info, dtype, settings, grad=backward)[: settings.compile_samples]
    # Dynamo is reset by the first compile step, not here: the planner runs this far while
    # the eager paths' probes watch (worker.record_pair), and a reset frees the compiled
    # frames of earlier pairs (Dynamo's CleanupHook ran "eagerly" for 84 ModuleInfo pairs).
    for i, item in enumerate(items):
        kept: dict[str, Any] = {}
        forward = seeded(seed, _compiled_forward, kept, info, dtype, settings, item, i == 0)
        yield Step("compile", i, forward)
        if backward and "out" in kept:  # the caller has run the step above by now
            inputs = _params_and_inputs(kept["module"], item)
            yield Step("compile_backward", i, seeded(seed, grad_of_kept, kept, inputs, seed))
