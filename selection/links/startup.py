"""What `import torch` runs: the modules it imports and the functions their load-time code
calls. Pure over the index (module summaries and the link graph).

Every reused test imports torch, so whatever `import torch` runs runs before every test: a
change there can affect any of them (a registration helper that now raises breaks the
import; one that registers differently changes some op's kernel), whatever its runtime
callers. The startup modules are found by following load-time imports
(selection.python.load_time) from `torch/__init__.py`; the load-time functions are what
their load-time code calls (a decorator factory such as `register_decomposition`, a
module-level `activate_meta()`; a class called there: its constructor), and what those call
in turn while they run (`load_time_functions`), from the functions the link graph knows. A
module of a package summarized as one node (selection.links.subsystems) that a startup
module imports is a startup module, but it is not opened: what it imports and calls on
import is unknown.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from selection.links.base import Step, Target
from selection.links.calls import TENSOR_MODULE, named_tensor_method
from selection.links.explore import Explorer
from selection.links.index import LinkIndex
from selection.links.subsystems import subsystem_of
from selection.pyast import MODULE_SYMBOL
from selection.python.nesting import CONSTRUCTORS

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
    """The functions `import torch` runs (`load_time_depths`)."""
    return frozenset(load_time_depths(index))


def load_time_depths(index: LinkIndex) -> Mapping[Target, int]:
    """The functions the startup modules' load-time code calls, and what they call in turn
    while it runs: a called function's own body, not the functions it defines (they run
    when called: `_make_copy_from_view`'s `_fn` at test time), but the one a factory
    returns where that is called there too (`@register_decomposition(op)` runs the
    decorator it returns); a constructed class's constructor (its `__call__` where the
    instance is applied). A call on an object of unknown type is linked to the `Tensor`
    method of its name (`regx.split`): no tensor method runs on import. Per function, how
    deep in the functions it defines its code runs then (0: its own body; 1: the decorator
    a factory returns, too)."""

    def build() -> dict[Target, int]:
        explorer = index.explorer
        tensor = explorer.summary(TENSOR_MODULE)
        queue: deque[tuple[Target, int]] = deque()
        for path in startup_modules(index):
            if subsystem_of(path) is not None:
                continue
            summary = explorer.summary(path)
            if summary is None:
                continue
            for use in summary.load_uses:
                if use.nesting:
                    continue  # in a lambda or function defined at module level
                for target in explorer.resolver.resolve(summary, MODULE_SYMBOL, use.chain):
                    if target.kind == "function" and _calls(use.chain, target):
                        queue.append((target, int(use.applied)))
        depth: dict[Target, int] = {}  # per function, the deepest nested body known to run
        while queue:
            node, runs = queue.popleft()
            if depth.get(node, -1) >= runs:
                continue
            depth[node] = runs
            cls = _is_class(explorer, node)  # its body ran where it was defined
            if cls:  # its constructor runs (and `__call__` where the instance is applied)
                queue.extend((m, 0) for m in explorer.methods_of(node) if _constructs(m, runs > 0))
            if node not in index.graph:
                continue  # reached by no test: a change there is a blind spot with its canary
            for used, _kind, step in explorer.function_uses(node):
                if not _runs(step, used, 0 if cls else runs) or named_tensor_method(used, tensor):
                    continue
                # a method of a constructed class: its body, not what it returns, runs
                queue.append((used, int(step.applied and not step.constructs)))
        return depth

    return index.memo("startup.load_time_depths", build)


def _runs(step: Step, used: Target, runs: int) -> bool:
    """Does a use (`step`, of `used`) in code running to nesting `runs` run a function?
    A call in a body that runs; of a class constructed there, its constructor (`__call__`
    where the instance is applied), not its other methods."""
    if used.kind != "function" or not step.called or step.nesting > runs:
        return False
    return not (step.constructs and "." in used.name and not _constructs(used, step.applied))


def _is_class(explorer: Explorer, target: Target) -> bool:
    summary = explorer.summary(target.path)
    return summary is not None and summary.kinds.get(target.name) == "class"


def _calls(chain: tuple[str, ...], target: Target) -> bool:
    """Does a call of `chain` call `target` itself, not something of an attribute of it
    (`upsample.__doc__.format(...)` calls str.format, not upsample)? A bare name may be an
    alias; a dotted chain ends with the function's own name."""
    return len(chain) == 1 or chain[-1] == target.name.rsplit(".", 1)[-1]


def _constructs(method: Target, applied: bool = False) -> bool:
    """What calling a class at import runs of its methods: its constructor, and `__call__`
    where the instance is applied there (`@wrapper_class(arg)` on a definition); the rest
    runs when the instance is used, which is what the links follow."""
    name = method.name.rsplit(".", 1)[-1]
    return name in CONSTRUCTORS or (applied and name == "__call__")
