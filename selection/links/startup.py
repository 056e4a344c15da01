"""What `import torch` runs: the modules it imports and the functions their load-time code
calls. Pure over the index (module summaries and the link graph).

Every reused test imports torch, so whatever `import torch` runs runs before every test: a
change there can affect any of them (a registration helper that now raises breaks the
import; one that registers differently changes some op's kernel), whatever its runtime
callers. The startup modules are found by following load-time imports
(selection.python.load_time) from `torch/__init__.py`; the load-time functions are what
their load-time code calls (a decorator factory such as `register_decomposition`, a
module-level `activate_meta()`; a class called there: its constructor), and what those call
in turn as far as the link graph knows it. A module of a package summarized as one node (selection.links.subsystems) that a
startup module imports is a startup module, but it is not opened: what it imports and
calls on import is unknown.
"""

from __future__ import annotations

from collections import deque

from selection.links.base import Target
from selection.links.index import LinkIndex
from selection.links.subsystems import subsystem_of
from selection.pyast import MODULE_SYMBOL

ROOT = "torch/__init__.py"


def startup_modules(index: LinkIndex) -> frozenset[str]:
    """The paths of the modules `import torch` imports (itself included)."""

    def build() -> frozenset[str]:
        explorer = index.explorer
        names = explorer.names
        seen: set[str] = set()
        queue = deque([ROOT] if explorer.summary(ROOT) is not None else [])
        while queue:
            path = queue.popleft()
            if path in seen:
                continue
            seen.add(path)
            if subsystem_of(path) is not None:
                continue  # imported, but never parsed: what it imports in turn is unknown
            summary = explorer.summary(path)
            for dotted in summary.load_imports if summary is not None else ():
                for module in _with_packages(dotted):
                    found = names.path_of(module)
                    if found and found.startswith("torch/"):
                        queue.append(found)
        return frozenset(seen)

    return index.memo("startup.startup_modules", build)


def _with_packages(dotted: str) -> list[str]:
    """`torch.nn.functional` -> `torch`, `torch.nn`, `torch.nn.functional`: importing a
    module runs its packages' `__init__` first."""
    parts = dotted.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def load_time_functions(index: LinkIndex) -> frozenset[Target]:
    """The functions the startup modules' load-time code calls, and what they call."""

    def build() -> frozenset[Target]:
        explorer = index.explorer
        seeds: list[Target] = []
        for path in startup_modules(index):
            if subsystem_of(path) is not None:
                continue
            summary = explorer.summary(path)
            if summary is None:
                continue
            for use in summary.load_uses:
                for target in explorer.resolver.resolve(summary, MODULE_SYMBOL, use.chain):
                    if target.kind == "function" and _calls(use.chain, target):
                        seeds.append(target)
        return frozenset(index.functions_reached(seeds, methods=_constructs))

    return index.memo("startup.load_time_functions", build)


def _calls(chain: tuple[str, ...], target: Target) -> bool:
    """Does a call of `chain` call `target` itself, not something of an attribute of it
    (`upsample.__doc__.format(...)` calls str.format, not upsample)? A bare name may be an
    alias; a dotted chain ends with the function's own name."""
    return len(chain) == 1 or chain[-1] == target.name.rsplit(".", 1)[-1]


CONSTRUCTORS = ("__new__", "__init__", "__post_init__")


def _constructs(method: Target) -> bool:
    """What calling a class at import runs of its methods: its constructor (the rest runs
    when the instance is used, which is what the links follow)."""
    return method.name.rsplit(".", 1)[-1] in CONSTRUCTORS
