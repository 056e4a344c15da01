"""Template bodies known only from the recorded layout: what they use, as link edges. Pure.

Release wheels ship no `test/`, so without a source tree a template's body cannot be read.
A plain device test (`TestNNDeviceType.test_linear_empty` builds an `nn.Linear`) would then
be linked to nothing a library change reaches: a change to `Linear.forward` would skip it
silently. So the layout generator (`python -m selection.layout`, selection.layout) records
what each template's body reaches outside `test/` in the tree it is recorded from, its
file's own helpers followed, as names that do not depend on where a file sits in one
release:

- `torch.nn.modules.linear:Linear()`: a class the body constructs or calls (its methods
  may run on the instance);
- `torch.nn.modules.linear:Linear`: a function, method, or a class only referenced
  (module, then qualname);
- `aten:randn`: an ATen op;
- `subsystem:torch/_dynamo`: a package summarized as one node (selection.links.subsystems).

Here each is looked up in the analysed revision where it was defined when recorded
(`Resolver.resolve_in`), else by its dotted name, and becomes an edge of kind `call` from
the template, the kind a read body's calls have, so the graph's rules for test code apply
unchanged (a call of an ATen op from test code runs its eager kernel, never its
decomposition). A constructed class brings the methods its construction may run
(`constructed`: selection.links.calls.constructed_methods), as in a read body. A name the
revision no longer has (moved, removed, a subsystem no longer collapsed) resolves to
nothing; `unresolved` lists them for the run's note.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

from selection.links.base import Step, Target
from selection.links.graph import LinkGraph
from selection.links.subsystems import subsystem_of
from selection.python.names import dotted_of
from selection.python.resolver import Resolver
from selection.templates import Template

KIND = "call"  # the kind of a read body's uses (selection.links.calls)
ATEN, SUBSYSTEM, CONSTRUCTED = "aten:", "subsystem:", "()"


def encode(target: Target, constructs: bool = False) -> str | None:
    """The portable name of what a template body uses (`constructs`: a class it builds);
    None for what is not recorded (test code itself, entries, instances)."""
    if target.kind == "aten":
        return ATEN + target.name
    if target.kind == "subsystem":
        return SUBSYSTEM + target.name
    if target.kind == "function" and not target.path.startswith("test/"):
        return f"{dotted_of(target.path)}:{target.name}" + (CONSTRUCTED if constructs else "")
    return None


def body_uses(graph: LinkGraph, template: Target) -> list[str]:
    """What a read template's body reaches outside `test/`, its file's helpers followed, as
    sorted recorded names (for the layout generator). The methods a construction brings
    are left out (the constructed class stands for them); a class both constructed and
    referenced is recorded as constructed."""
    found: set[str] = set()
    seen: set[Target] = {template}
    queue = deque([template])
    while queue:
        for edge in graph.uses.get(queue.popleft(), ()):
            used, constructs = edge.used, edge.step.constructs
            if used.kind == "function" and used.path.startswith("test/"):
                if used not in seen:
                    seen.add(used)
                    queue.append(used)
            elif not (constructs and "." in used.name):  # a method a construction brings
                name = encode(used, constructs)
                if name is not None:
                    found.add(name)
    return sorted(n for n in found if n + CONSTRUCTED not in found)


def decode(name: str, resolver: Resolver) -> list[Target]:
    """What a recorded name is in the analysed revision (empty when it has no such thing)."""
    if name.startswith(ATEN):
        op = name.removeprefix(ATEN)
        return [Target.aten(op)] if op.split(".", 1)[0] in resolver.aten_ops else []
    if name.startswith(SUBSYSTEM):
        package = name.removeprefix(SUBSYSTEM)
        return [Target("subsystem", package)] if subsystem_of(package) == package else []
    module, colon, qualname = name.removesuffix(CONSTRUCTED).partition(":")
    if not colon or not qualname:
        return []
    return resolver.resolve_in(module, qualname) or resolver.resolve_dotted(f"{module}.{qualname}")


def recorded_uses(
    template: Target,
    names: Iterable[str],
    resolver: Resolver,
    constructed: Callable[[Target], list[Target]],
    source: str,
) -> Iterator[tuple[Target, str, Step]]:
    """The edges of a template whose body is known only by its recorded uses."""
    where = f"{template.scope}.{template.name}"
    for name in names:
        constructs = name.endswith(CONSTRUCTED)
        how = f"uses {name} (recorded from {source})"
        for target in decode(name, resolver):
            methods = constructed(target) if constructs else []
            step = Step(template.path, where, how, constructs=bool(methods))
            yield target, KIND, step
            for method in methods:
                yield method, KIND, step


def unresolved(names: Iterable[str], resolver: Resolver) -> list[str]:
    """The recorded names the analysed revision has nothing for."""
    return [name for name in names if not decode(name, resolver)]


def recorded_bodies_note(templates: Iterable[Template], resolver: Resolver) -> str | None:
    """What the run's notes say of the template bodies known only by their recorded uses
    (None when every body was read, or none is recorded)."""
    bodies = [t for t in templates if t.symbol is None and t.recorded_uses]
    if not bodies:
        return None
    names = sorted({name for t in bodies for name in t.recorded_uses})
    missing = unresolved(names, resolver)
    text = (
        f"{len(bodies)} template bodies are known by what they use, as recorded from "
        f"{bodies[0].recorded_from} ({len(names)} names)"
    )
    if missing:
        shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
        text += (
            f"; {len(missing)} of those names {'has' if len(missing) == 1 else 'have'} "
            f"nothing in this revision ({shown}): their templates are linked through the rest"
        )
    return text
