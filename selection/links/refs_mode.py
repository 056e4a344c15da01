"""What a changed Python reference reaches under TorchRefsMode. Pure.

The ref tests (`test_python_ref` and its family) run a PythonRefInfo's reference inside
`TorchRefsMode`, which sends each `torch.X` call made under it (and each `Tensor.X` method
call) to `torch._refs.X` where that exists. A changed reference `_refs.X` therefore also
runs in the ref tests of every reference that calls `torch.X` or `t.X()`, directly or
through other references: glu's reference calls `torch.sigmoid`, so a change to
`_refs.sigmoid` reaches `_refs.nn.functional.glu`'s ref tests. Outside the mode (eager,
traced, recorded) the same call runs the ATen op, so neither the call graph nor the
recording links it: these links are the ref entries' instances themselves.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

from selection.links.base import Link, Step, Target
from selection.python.chains import aten_in_chain
from selection.python.operators import MODE_MODULE
from selection.python.summary import ModuleSummary, unknown_receiver

REFS_ROOT = "torch/_refs/"
# The mode's table of what it sends where. Its entries are data the mode looks up, not code
# it runs: the link graph does not follow its uses (selection.links.explore), and
# `mode_aliases` reads its explicit entries into these links instead.
MODE_TABLE = (MODE_MODULE, "torch_to_refs_map")
# The table sends `Tensor.X` to `torch._refs._conversions.X` (`t.float()`, `t.bfloat16()`).
CONVERSIONS = "_conversions."
# per name called: (the caller's name under the mode, its path, its qualname, how it calls,
# line); a caller's names are its refs name and, for a kernel registered for ATen ops, each
# op's `aten_name` (under the mode, a call of the op runs it)
Callers = dict[str, list[tuple[str, str, str, str, int]]]
ATEN = "aten::"  # how `callers_by_name` names an ATen op (`aten_name`)
# per reference name, the Tensor methods the mode's table sends to it besides its own name
Aliases = dict[str, tuple[str, ...]]


def refs_name(path: str, qualname: str) -> str:
    """torch/_refs/__init__.py `sigmoid` -> "sigmoid"; torch/_refs/nn/functional/__init__.py
    `glu` -> "nn.functional.glu"; "" for anything that is no top-level reference."""
    if not path.startswith(REFS_ROOT) or not path.endswith(".py") or "." in qualname:
        return ""
    if qualname.startswith("<"):
        return ""  # the module's own statements (`<module>`)
    module = path[len(REFS_ROOT) :].removesuffix(".py").removesuffix("__init__").strip("/")
    return f"{module.replace('/', '.')}.{qualname}" if module else qualname


NamesOf = Callable[[str, str], list[str]]  # (path, qualname) -> its names under the mode


def callers_by_name(summaries: list[ModuleSummary], names_of: NamesOf | None = None) -> Callers:
    """Per torch name (`sigmoid`, `nn.functional.relu`), the references and registered
    kernels that call it as `torch.<name>(...)` or, for a top-level name, as a method of an
    object of unknown type; per Tensor method an operator reaches the mode as (`add`,
    `__floordiv__`), those whose operators may call it; per ATen op (`aten_name`), those
    calling it as `aten.<op>` (the mode runs its decomposition). `names_of`: a function's
    names under the mode (default: its refs name; the selection adds the ops the link graph
    knows it is registered for, by imported factories too)."""
    names_of = names_of or _own_refs_name
    found: Callers = {}
    for summary in summaries:
        for qualname, uses in summary.uses.items():
            names = names_of(summary.path, qualname)
            if not names:
                continue
            calls = [
                (called, f"calls {'.'.join(use.chain)}", use.line)
                for use in uses
                if (called := _called_torch_name(use.chain, use.how, summary))
            ]
            calls += [
                (method, f"applies an operator the mode sees as Tensor.{method}", line)
                for method, line in summary.operators.get(qualname, ())
            ]
            for called, how, line in calls:
                entries = found.setdefault(called, [])
                entries.extend((name, summary.path, qualname, how, line) for name in names)
    return found


def _own_refs_name(path: str, qualname: str) -> list[str]:
    name = refs_name(path, qualname)
    return [name] if name else []


def mode_aliases(context: ModuleSummary | None) -> Aliases:
    """The mode table's explicit entries sending a Tensor method to a reference under
    another name (`torch.Tensor.__floordiv__: torch._refs.floor_divide`): per reference
    name, those methods. Its other entries map `torch.<name>` to `_refs.<name>` by name."""
    if context is None or context.path != MODE_TABLE[0]:
        return {}
    found: dict[str, list[str]] = {}
    for key, value, _line in context.mappings.get(MODE_TABLE[1], ()):
        if key[:2] == ("torch", "Tensor") and len(key) == 3 and value[:2] == ("torch", "_refs"):
            name = ".".join(value[2:])
            if key[2] != name:
                found.setdefault(name, []).append(key[2])
    return {name: tuple(methods) for name, methods in found.items()}


def aten_name(op: str) -> str:
    """The name `callers_by_name` keeps a call of an ATen op under: under the mode,
    `aten.pad(...)` runs what the decomposition table holds for it."""
    return ATEN + op.split(".", 1)[0]


def _called_torch_name(chain: tuple[str, ...], how: str, summary: ModuleSummary) -> str:
    if how != "call" or len(chain) < 2:
        return ""
    op = aten_in_chain(chain, summary.aten_aliases)
    if op:
        return aten_name(op)
    if chain[0] == "torch":
        return ".".join(chain[1:])
    return chain[1] if len(chain) == 2 and unknown_receiver(chain, summary) else ""


Direct = Callable[[str], Iterable[tuple[str, Step]]]


def refs_mode_reach(
    changed: str,
    callers: Callers,
    aliases: Aliases | None = None,
    direct: Direct = lambda _name: (),
) -> list[tuple[str, tuple[Step, ...]]]:
    """The references (by refs name) that run the reference `changed` under the mode, each
    with the chain of calls from it to the change (nearest first). `aliases`:
    `mode_aliases`; `direct`: per reference, the references calling it as a Python function
    (`sigmoid` calling `_scaled(a)`), which run under the mode whatever it runs there."""
    reached: dict[str, tuple[Step, ...]] = {}
    queue: deque[tuple[str, tuple[Step, ...]]] = deque([(changed, ())])
    while queue:
        name, chain = queue.popleft()
        for caller, step in [*_mode_callers(name, callers, aliases or {}), *direct(name)]:
            if caller not in reached and caller != changed:
                reached[caller] = (*chain, step)
                queue.append((caller, reached[caller]))
    return sorted(reached.items())


def _mode_callers(name: str, callers: Callers, aliases: Aliases) -> Iterator[tuple[str, Step]]:
    """The references and kernels whose calls or operators run `name` under the mode."""
    asked = (name, *aliases.get(name, ()), *_conversion_method(name))
    op = name.removeprefix(ATEN)
    runs = f"aten.{op}'s decomposition" if op != name else f"torch._refs.{name}"
    for caller, path, qualname, how, line in (c for n in asked for c in callers.get(n, ())):
        yield caller, Step(path, qualname, f"{how} (line {line}), {runs} under TorchRefsMode")


def _conversion_method(name: str) -> tuple[str, ...]:
    """`_conversions.float` is what `t.float()` runs under the mode."""
    return (name.removeprefix(CONVERSIONS),) if name.startswith(CONVERSIONS) else ()


def ref_entry_links(
    reached: list[tuple[str, tuple[Step, ...]]],
    entries: dict[str, list[Target]],
    instances_of: Callable[[Target], tuple[str, ...]],
    first: Step,
) -> list[Link]:
    """The instances of the PythonRefInfos of the reached references (`entries`: per refs
    full name "_refs.<name>", its entry targets; `instances_of`: their node ids)."""
    links: list[Link] = []
    for name, chain in reached:
        for entry in entries.get(f"_refs.{name}", ()):
            ids = instances_of(entry)
            if ids:
                label = f"ref tests of {entry.name}"
                links.append(Link(Target.instances(label, ids), (first, *chain)))
    return links
