"""Observed dependencies: what each reused (op, dtype) executes on a PrivateUse1 device.

Torch-free entry points (torch is imported only by the worker processes and the ground-truth
runner's `digest_pairs`):

- `spyre-ci deps record|export|import|show` (`spyre_ci.deps.cli`);
- `selection.sources.deps_store.load_observed(cache_dir, torch_version, device) -> ObservedMap | None`,
  the map `spyre-ci select` consumes (docs/deps.md);
- `spyre_ci.deps.truth`: the ground-truth runner for the mutation benchmark.
"""

# The paths a pair's samples go through (spyre_ci.deps.paths), in recording order.
ALL_PATHS: tuple[str, ...] = (
    "eager",
    "method",
    "inplace",
    "out",
    "backward",
    "compile",
    "compile_backward",
)

# Paths that compile: what only they run is recorded apart (`compiled_*` lists), since it
# runs for a test only where the test traces its op (or the device compiles eager ops).
COMPILED_PATHS = frozenset({"compile", "compile_backward"})
# Not recorded, asked for by the mutation benchmark's truth only: an OpInfo's samples through
# torch.compile without gradients. `compile` compiles samples that require grad where the op
# has a backward, so AOT autograd traces the joint graph and runs the backward's meta kernels
# too; this path tells what a forward-only trace (FakeTensor's templates) can see.
FORWARD_COMPILE = "compile_forward"
