"""First hop for a changed Python symbol (library, testing infrastructure, test helpers). Pure.

- Code only another device runs, `__all__` nothing reads, `torch/version.py`: no effect, with the reason.
- A symbol of the instantiation machinery (what `instantiate_device_type_tests`, the device
  test bases, `@ops` and `TestCase` reach): a stratified canary.
- Module-level statements: run at import, so they can affect whatever imports the module: a
  canary aimed at the tests that reach the module (database files, test files and the
  machinery: every reused test).
- Any other changed or removed symbol: the function itself, resolved through the link graph
  (callers, entries, registrations, ...). One that reused code calls only on another
  device's path (under `if x.is_cuda:`) has no effect here. A library symbol no reused test
  reaches is a blind spot covered by a canary aimed at what reaches its module (the
  stratified canary when nothing does); a testing helper no reused test reaches affects
  nothing.
- A test class's header reaches every template of the class; a database op list
  (`unary_ufuncs = [...]`), the templates parametrized over it.
- An added symbol nothing in the head reaches is reached only by code that changed to use
  it (mapped on its own); one that something reaches (a new decomposition registered for an
  op) is linked, through its users that did not change (selection.links.added: a user
  changed too is mapped on its own, and a new `Tensor` method shadowing an ATen op
  reaches what ran that op rather than every tensor's constructor). A removed one is
  reached only by code that changed to stop using it, unless it was registered as an op's
  kernel: then that op is linked.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from selection.links.added import added_reach, shadowed_aten_op
from selection.links.argument_reach import conditioned_outcome, conditioned_reach
from selection.links.base import Link, Outcome, Step, Target
from selection.links.graph import Edge, LinkGraph
from selection.links.index import LinkIndex
from selection.links.lifecycle import around_every_test
from selection.links.refs_mode import (
    MODE_TABLE,
    REFS_ROOT,
    Aliases,
    Callers,
    aten_name,
    callers_by_name,
    mode_aliases,
    ref_entry_links,
    refs_mode_reach,
    refs_name,
)
from selection.links.resolve import recording_saw, root_instances
from selection.links.startup import ROOT, load_time_depths, startup_modules
from selection.links.subsystems import is_other_device_package, subsystem_of
from selection.model import ChangeKind, SymbolChange
from selection.observed import NESTED
from selection.pyast import MODULE_SYMBOL
from selection.python.op_lists import op_list_text, op_names
from selection.python.operators import OPERATOR_MODULES
from selection.templates import TestModule
from selection.upstream import INTERNAL, is_database_file

MACHINERY_FILES = (
    f"{INTERNAL}/common_device_type.py",
    f"{INTERNAL}/common_utils.py",
    f"{INTERNAL}/opinfo/core.py",
)
MACHINERY_ROOTS = (
    "instantiate_device_type_tests",
    "DeviceTypeTestBase",
    "PrivateUse1TestBase",
    "ops",
    "dtypes",
    "_TestParametrizer",
    "TestCase",
    "OpInfo",
    "DecorateInfo",
    "SampleInput",
    "run_tests",
)
BEHAVIOUR_FREE_SYMBOLS = {
    "__all__": "__all__ only lists the module's exports (nothing star-imports or reads it)"
}
BEHAVIOUR_FREE_FILES = {"torch/version.py": "version metadata (__version__, git_version)"}


def is_test_path(path: str) -> bool:
    return path.startswith(("test/", "torch/testing/"))


def machinery(index: LinkIndex) -> set[Target]:
    """Symbols of the machinery files reachable from the machinery roots."""

    def build() -> set[Target]:
        start = [Target.function(p, n) for p in MACHINERY_FILES for n in MACHINERY_ROOTS]
        return index.functions_reached(
            (t for t in start if t in index.graph or _defined(index, t)),
            lambda t: t.path in MACHINERY_FILES,
        )

    return index.memo("symbol_changes.machinery", build)


def _in_subsystem(change: SymbolChange, label: str, subsystem: str, index: LinkIndex) -> Outcome:
    """A change inside a package summarized as one node: what the recording saw run, else
    the package's canary. A module `import torch` imports is not analysed for what it runs
    on import: any of its code may, so it gets the canary over every test too."""
    startup = change.path in startup_modules(index)
    if startup and change.qualname == MODULE_SYMBOL:
        return _startup_statements(label)
    outcome = _linked_in_subsystem(change, label, subsystem, index)
    if outcome is None:
        outcome = subsystem_outcome(subsystem, label, index)
    if startup:
        return _at_import(
            outcome, f"{label}: in a module `import torch` imports (it may run there)"
        )
    if _module_level(change) and subsystem in _startup_subsystems(index):
        # which of the package's modules `import torch` imports in turn is not read
        why = f"{label}: module-level code of {subsystem}, which `import torch` imports"
        return _also_at_import(outcome, f"{why} (it may run there)")
    return outcome


def _module_level(change: SymbolChange) -> bool:
    """Code that runs when its module is imported and calls something: its statements, an
    assignment or class header that calls, a function's decorators or defaults or the
    statements beside its `def` (not a function's body; a plain constant runs nothing)."""
    if change.symbol_kind in ("assign", "class"):
        return change.calls_on_load
    return change.symbol_kind == "module" or change.definition


def _startup_subsystems(index: LinkIndex) -> frozenset[str]:
    """The packages summarized as one node that `import torch` imports a module of."""
    return index.memo(
        "symbol_changes.startup_subsystems",
        lambda: frozenset(s for path in startup_modules(index) if (s := subsystem_of(path))),
    )


def _also_at_import(outcome: Outcome, why: str) -> Outcome:
    """The outcome as it is, and the canary over every test besides (`why`: it may run
    while `import torch` runs)."""
    if outcome.no_effect:
        return Outcome(kind="canary", load_time=why)
    return replace(outcome, load_time=why)


def _startup_statements(label: str) -> Outcome:
    """Module-level statements of a module `import torch` imports: they run before every
    test, so the stratified canary over all of them."""
    return Outcome(canary=f"{label}: module-level statements run by `import torch`", kind="canary")


def _refs_exports(change: SymbolChange, label: str, index: LinkIndex) -> Outcome:
    """A references module's `__all__` is what TorchRefsMode maps: `torch_to_refs_map`
    sends `torch.X` to `_refs.X` for each name it lists, so a name it gains or loses
    changes what runs under the mode for every reference calling `torch.X`: their ref
    tests. Without the names (a list that is no literal), a canary aimed at every ref test."""
    names = change.exports
    first = Step(change.path, change.qualname, f"{change.kind}: {' '.join(names or ())}")
    how = Step(MODE_TABLE[0], MODE_TABLE[1], "maps torch's names to the references it lists")
    seeds = [refs_name(change.path, name[1:]) for name in names or ()]
    reached: dict[str, tuple[Step, ...]] = {}
    for seed in seeds:
        for name, chain in _mode_reach(seed, index):
            reached.setdefault(name, (how, *chain))
    entries = _ref_entries(index)
    links = ref_entry_links(
        sorted(reached.items()), entries, lambda e: _instance_ids(e, index), first
    )
    if names is not None:  # the names it lists are known
        if links:
            return Outcome(links=links, kind="library")
        why = "the same names, reordered" if not names else f"no reference calls {', '.join(seeds)}"
        return Outcome(no_effect=f"{label}: TorchRefsMode maps the names it lists; {why}")
    every = [
        Link(Target.instances(f"ref tests of {entry.name}", ids), (first, how))
        for targets in entries.values()
        for entry in targets
        if (ids := _instance_ids(entry, index))
    ]
    why = f"{label}: TorchRefsMode maps the names it lists (the ref tests run under it)"
    return Outcome(links=every, canary=why, kind="canary")


def _exports_read(change: SymbolChange, index: LinkIndex) -> tuple[str, bool]:
    """Why a module's `__all__` edit is behaviour ("" when it is not), and whether what
    reads it binds or uses the names: `from M import *` in a module binds them
    (`torch.functional`'s become `torch`'s), code reads the list; or its own code reads it
    (`if __all__ != sorted(__all__): raise`, torch/__init__.py: a reordering fails the
    import), which only the order matters to."""
    if change.exports != ():
        importers = _star_importers(index).get(change.path, [])
        if importers:
            return f"what `import *` of it binds in {', '.join(sorted(importers)[:3])}", True
        readers = index.graph.users.get(Target.function(change.path, "__all__"), ())
        if readers:
            return f"read as a list by {readers[0].user.full_name}", True
    if _reads_own_exports(change.path, index):
        return "its module reads the list on import", False
    return "", False


def _reads_own_exports(path: str, index: LinkIndex) -> bool:
    text = index.explorer.trees.tree.read(path) or ""
    if text.count("__all__") < 2:
        return False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return True  # unreadable: it may
    return any(
        isinstance(node, ast.Name) and node.id == "__all__" and isinstance(node.ctx, ast.Load)
        for node in ast.walk(tree)
    )


def _star_importers(index: LinkIndex) -> dict[str, list[str]]:
    """Per module path, the modules under torch/ that `from it import *`."""

    def build() -> dict[str, list[str]]:
        explorer, starred = index.explorer, dict[str, list[str]]()
        for path in explorer.trees.tree.list("torch"):
            if not path.endswith(".py") or "import *" not in (explorer.trees.tree.read(path) or ""):
                continue  # (summarizing every module costs a minute)
            summary = explorer.summary(path)
            for dotted in summary.star_imports if summary is not None else ():
                found = explorer.names.path_of(dotted)
                if found:
                    starred.setdefault(found, []).append(path)
        return starred

    return index.memo("symbol_changes.star_importers", build)


def _exported_names(change: SymbolChange, index: LinkIndex) -> Outcome:
    """What uses the names an `__all__` gained or lost: the module's function of that name,
    and, where `torch` star-imports it, the ATen op a binding of torch's may shadow
    (`torch.tensordot` falls back to the C binding once torch.functional stops exporting
    its own)."""
    first = Step(change.path, change.qualname, f"{change.kind}: {' '.join(change.exports or ())}")
    into_torch = ROOT in _star_importers(index).get(change.path, [])
    links = [
        Link(target, (first,))
        for name in (signed[1:] for signed in change.exports or ())
        for target in (Target.function(change.path, name), *([Target.aten(name)] * into_torch))
    ]
    return Outcome(links=links, kind="library") if links else Outcome(no_effect="-")


def _imported_by_startup(path: str, index: LinkIndex) -> bool:
    """Does `import torch` import a module that star-imports this one (or this one)?"""
    startup = startup_modules(index)
    return path in startup or any(m in startup for m in _star_importers(index).get(path, []))


def _at_import(outcome: Outcome, why: str) -> Outcome:
    """A change that runs while `import torch` runs, or around every test (`why`): the
    canary over every test, and what its links reach at run time. Nothing is then a blind spot (the canary aimed at a
    blind spot is a part of that one), and "no effect" at run time is not none at import."""
    links = [] if outcome.canary or outcome.no_effect else outcome.links
    return Outcome(links=links, kind=outcome.kind if links else "canary", load_time=why)


def _linked_in_subsystem(
    change: SymbolChange, label: str, subsystem: str, index: LinkIndex
) -> Outcome | None:
    """A function inside a package summarized as one node that is linked all the same: one
    the recording saw run (a FakeTensor implementation, a lowering, a dispatcher helper)
    reaches the pairs that ran it; one the graph knows (a FakeTensor implementation
    registered for an op: selection.links.registrations), that op's traced instances. The
    package's canary stays beside: templates' own bodies call into it beyond what the
    recording runs (FakeTensorMode, torch.compile on their own inputs). None when neither
    can tell (module-level code; a function never seen run: code run at import, or only by
    ops the recording did not record)."""
    if change.qualname == MODULE_SYMBOL or change.kind == ChangeKind.added:
        return None
    link = _changed_link(change, f" (inside {subsystem})")
    aim = _subsystem_aim(subsystem)
    beside = f"{label}: inside {subsystem}, reached as a whole"
    blind = f"{label}: inside {subsystem}, linked only by the recording"
    outcome = _recorded(index, link, "library", blind, aim)
    if outcome is None and change.kind == ChangeKind.modified and link.target in index.graph:
        outcome = Outcome(links=[link], kind="library", canary_aim=aim)
    if outcome is not None:
        outcome.beside = beside
    return outcome


def _method_of_surviving_class(change: SymbolChange, index: LinkIndex) -> Outcome | None:
    """Statically, a method removed from a class the head still defines reaches what uses
    the class: a call on its instances names no definition, so callers need not have
    changed (the call now finds the name in a base, or fails)."""
    owner, _, _ = change.qualname.rpartition(".")
    summary = index.explorer.summary(change.path)
    if not owner or summary is None or summary.kinds.get(owner) != "class":
        return None
    how = f"lost its method {change.qualname.rsplit('.', 1)[1]} (removed)"
    step = Step(change.path, owner, how)
    kind = "helper" if is_test_path(change.path) else "library"
    return Outcome(links=[Link(Target.function(change.path, owner), (step,))], kind=kind)


def _subsystem_aim(subsystem: str) -> list[Link]:
    """What reaches a package summarized as one node (a canary's aim)."""
    step = Step(subsystem, "", "changed inside the package (summarized as one node)")
    return [Link(Target("subsystem", subsystem), (step,))]


def _changed_link(change: SymbolChange, where: str = "") -> Link:
    """The changed function itself, with how it changed (and where its edit is confined to
    nested functions, those: the recording answers for them)."""
    how = f"{change.kind}{where}"
    if change.nested:
        how += " (only in " + ", ".join(change.nested) + ")"
    step = Step(change.path, change.qualname, how)
    target = Target.function(change.path, change.qualname)
    return Link(target, (step,), observed_as=change.nested)


def _recorded(
    index: LinkIndex, link: Link, kind: str, blind: str, aim: list[Link]
) -> Outcome | None:
    """A link only the recording makes: the pairs it saw run the changed code, and for what
    it does not record (pairs without a recording, templates' own code) the blind spot and
    its canary aimed at `aim`. None when the recording never saw it run (or there is none)."""
    if index.observed is None or not recording_saw(index.observed, link):
        return None
    return Outcome(links=[link], kind=kind, unrecorded_blind=blind, canary_aim=aim)


def _through_unchanged_users(
    change: SymbolChange,
    label: str,
    index: LinkIndex,
    mapped: frozenset[Target],
    shadowed: str,
) -> Outcome | None:
    """An added function some of whose users are mapped on their own (`mapped`), or a new
    `Tensor` method shadowing the ATen op `shadowed` (selection.links.added): what its other
    users reach; None: linked as it is."""
    target = Target.function(change.path, change.qualname)
    reach = added_reach(
        target,
        index.graph.users.get(target, []),
        mapped,
        shadowed,
        Step(change.path, change.qualname, str(change.kind)),
    )
    if reach is None:
        return None
    if not reach.links:
        why = "; ".join(reach.set_aside[:3])
        return Outcome(no_effect=f"{label}: new, and only code mapped on its own uses it: {why}")
    kind = "helper" if is_test_path(change.path) else "library"
    return Outcome(links=reach.links, kind=kind)


def _with_refs_mode(outcome: Outcome, change: SymbolChange, index: LinkIndex) -> Outcome:
    """A changed reference of torch/_refs, and every reference whose code runs the change
    (the call graph: a helper of `_refs.native_layer_norm`), also reach the ref tests of the
    references that call them under TorchRefsMode (selection.links.refs_mode), beside their
    links. A machinery canary's outcome is left as it is (its aim is what the links reach);
    one that nothing links statically (a reference only the mode's table names) keeps its
    canary and blind spot beside these links (what else may run it is not known)."""
    machinery = outcome.canary and not outcome.blind_spots
    if change.kind == ChangeKind.added or machinery:
        return outcome
    first = Step(change.path, change.qualname, str(change.kind))
    reached: dict[str, tuple[Step, ...]] = {}
    for seed, start in _refs_running(change, index):
        for name, chain in _mode_reach(seed, index):
            reached.setdefault(name, (*start, *chain))
    links = ref_entry_links(
        sorted(reached.items()),
        _ref_entries(index),
        lambda entry: _instance_ids(entry, index),
        first,
    )
    if not links:
        return outcome
    if outcome.no_effect:
        return Outcome(links=links, kind="library")
    if outcome.canary:
        return Outcome(
            links=links,
            beside=outcome.canary,
            canary_aim=outcome.links,
            blind_spots=outcome.blind_spots,
            kind="library",
        )
    outcome.links = [*outcome.links, *links]
    return outcome


def _instance_ids(entry: Target, index: LinkIndex) -> tuple[str, ...]:
    """An entry's instances' ids, once per run (many changes reach the same ref entries)."""
    return index.memo_per(
        "symbol_changes.instance_ids",
        entry,
        lambda: tuple(i.node_id for i in root_instances(entry, index)),
    )


def _refs_running(change: SymbolChange, index: LinkIndex) -> list[tuple[str, tuple[Step, ...]]]:
    """The references (by refs name) that run the change: itself, when it is one, then those
    calling it, directly or through other functions (each with a step saying so)."""
    if change.qualname == MODULE_SYMBOL:
        return []  # what runs at import: the module-level links decide
    own = refs_name(change.path, change.qualname)
    seeds: list[tuple[str, tuple[Step, ...]]] = [(own, ())] if own else []
    targets = _running_the_change(change, index)
    how = "runs the changed code (it calls it, directly or through other functions)"
    graph = index.graph
    for node in graph.users_among("refs-calling", targets, _is_reference, _is_call):
        name = refs_name(node.path, node.name)
        if name != own:
            seeds.append((name, (Step(node.path, node.name, how),)))
    # a decomposition (or what it calls) runs under the mode where a reference calls its
    # op as `aten.<op>` (the mode looks such calls up in the decomposition table)
    registered = graph.users_among(
        "registered-calling", targets, lambda node: bool(_registrations(node, graph)), _is_call
    )
    for kernel in registered:
        start = () if kernel in targets else (Step(kernel.path, kernel.name, how),)
        for edge in _registrations(kernel, graph):
            seeds.append((aten_name(edge.user.name), (*start, edge.step)))
    return seeds


def _running_the_change(change: SymbolChange, index: LinkIndex) -> list[Target]:
    """What runs the changed code when it runs: the function, or, for an edit that matters
    only for some values of a parameter, its users that may pass another
    (selection.links.argument_reach)."""
    changed = Target.function(change.path, change.qualname)
    reach = conditioned_reach(change, index)
    if reach is None:
        return [changed]
    starts = [link.target for link in reach.starts]
    # registered for an op that may be called with a changed value: the mode runs it too
    return [changed, *starts] if any(t.kind == "aten" for t in starts) else starts


def _registrations(target: Target, graph: LinkGraph) -> list[Edge]:
    """The edges registering a function as a Python kernel of ATen ops (none: no kernel)."""
    return [
        e for e in graph.users.get(target, ()) if e.kind == "registration" and e.user.kind == "aten"
    ]


def _is_reference(target: Target) -> bool:
    return target.kind == "function" and bool(refs_name(target.path, target.name))


def _is_call(edge: Edge) -> bool:
    return edge.kind == "call"


def _mode_reach(name: str, index: LinkIndex) -> list[tuple[str, tuple[Step, ...]]]:
    """`refs_mode_reach` from one reference, worked out once per run."""
    return index.memo_per(
        "symbol_changes.mode_reach",
        name,
        lambda: refs_mode_reach(
            name, _refs_callers(index), _mode_aliases(index), lambda ref: _direct(ref, index)
        ),
    )


def _direct(name: str, index: LinkIndex) -> list[tuple[str, Step]]:
    """The references and registered kernels calling reference `name` as a Python function
    (the graph's calls), by their names under the mode."""
    node = _reference_nodes(index).get(name)
    users = index.graph.users.get(node, []) if node is not None else []
    return [(caller, e.step) for e in users if _is_call(e) for caller in _mode_names(e.user, index)]


def _mode_names(target: Target, index: LinkIndex) -> list[str]:
    """A function's names under the mode: its refs name, and the `aten_name`s of the ops it
    is registered for (`refs_mode.Callers`)."""
    if target.kind != "function":
        return []
    own = refs_name(target.path, target.name)
    registered = [aten_name(e.user.name) for e in _registrations(target, index.graph)]
    return list(dict.fromkeys([own, *registered] if own else registered))


def _reference_nodes(index: LinkIndex) -> dict[str, Target]:
    def build() -> dict[str, Target]:
        nodes = [*index.graph.users, *index.graph.uses]
        return {refs_name(n.path, n.name): n for n in nodes if _is_reference(n)}

    return index.memo("symbol_changes.reference_nodes", build)


def _mode_aliases(index: LinkIndex) -> Aliases:
    return index.memo(
        "symbol_changes.mode_aliases", lambda: mode_aliases(index.explorer.summary(MODE_TABLE[0]))
    )


def _refs_callers(index: LinkIndex) -> Callers:
    def build() -> Callers:
        paths = [
            p
            for root in OPERATOR_MODULES
            for p in (index.head.tree.list(root) if root.endswith("/") else [root])
            if p.endswith(".py")
        ]
        summaries = [s for p in paths if (s := index.explorer.summary(p)) is not None]
        return callers_by_name(
            summaries, lambda path, qualname: _mode_names(Target.function(path, qualname), index)
        )

    return index.memo("symbol_changes.refs_callers", build)


def _ref_entries(index: LinkIndex) -> dict[str, list[Target]]:
    def build() -> dict[str, list[Target]]:
        found: dict[str, list[Target]] = {}
        for entry in index.db.entries.values():
            if entry.full_name.startswith("_refs."):
                target = Target.entry(entry.database, entry.name, entry.variant)
                found.setdefault(entry.name, []).append(target)
        return found

    return index.memo("symbol_changes.ref_entries", build)


def mapped_on_their_own(changes: list[SymbolChange]) -> frozenset[Target]:
    """The added and modified symbols whose own mapping reaches everything that runs them:
    a use by one of them is followed there, not again as a use of an added function it
    calls. Not one with a "no effect" reason whatever it reaches (`behaviour_free`), nor one
    changed only on failing paths (that reaches only tests that handle errors, and a new
    function it calls may run on its other paths), nor an op-list edit (likewise, where its
    ops run)."""
    return frozenset(
        Target.function(c.path, c.qualname)
        for c in changes
        if c.kind in (ChangeKind.added, ChangeKind.modified)
        and not behaviour_free(c)
        and not c.failure_only
        and not c.op_list  # reaches only where its ops run (selection.python.op_lists)
    )


def behaviour_free(change: SymbolChange) -> str:
    """Why a change has no effect here whatever it reaches, or ""."""
    if change.other_device_only:
        return "only another device's code changed"
    if change.path in BEHAVIOUR_FREE_FILES:
        return BEHAVIOUR_FREE_FILES[change.path]
    if change.qualname in BEHAVIOUR_FREE_SYMBOLS:
        return BEHAVIOUR_FREE_SYMBOLS[change.qualname]
    return ""


def _runs_at_import(change: SymbolChange, index: LinkIndex) -> bool:
    """Code of a module `import torch` imports that runs then: a module-level assignment or
    a class header that calls something, a function's decorators or defaults, or the code
    of a function that load-time code calls that runs then (module-level statements are
    handled as such; an added or removed symbol's module-level users changed too)."""
    if change.qualname == MODULE_SYMBOL or change.kind != ChangeKind.modified:
        return False
    if change.path not in startup_modules(index):
        return False
    if change.definition and NESTED not in change.qualname:
        return True
    summary = index.explorer.summary(change.path)
    if summary is not None and summary.kinds.get(change.qualname) in ("assign", "class"):
        # its statements run on import; a plain value matters through what reads it
        return change.qualname in summary.calls_on_load
    depths = load_time_depths(index)
    # an edit confined to a function it defines runs on import only where that one does
    # (the decorator a factory returns), not the function it returns (`_fn`, `_ref`)
    depth = depths.get(Target.function(change.path, change.qualname))
    reach = conditioned_reach(change, index)
    if reach is not None:
        # module-level code and class bodies are no users the walk judges: what import
        # runs of the changed function, or of one passing its parameter on, counts whatever
        # it passes; and so does a user that may pass a changed value
        running = [link.target for link in reach.starts]
        if any(t in depths for t in [*reach.conditioned, *running]):
            return True
    return depth is not None and change.nesting <= depth


def _runs_around_every_test(change: SymbolChange, index: LinkIndex) -> bool:
    """A modified function or method that `TestCase`'s or the device bases' per-test
    methods reach (selection.links.lifecycle); an added or removed one's callers changed."""
    if change.kind != ChangeKind.modified or change.qualname == MODULE_SYMBOL:
        return False
    every_test = around_every_test(index)
    return any(t in every_test for t in _running_the_change(change, index))


def _defined(index: LinkIndex, target: Target) -> bool:
    summary = index.explorer.summary(target.path)
    return summary is not None and target.name in summary.kinds


def module_reach(index: LinkIndex, path: str) -> list[Link]:
    """Links to every symbol of a module that the graph knows (what reaches the module)."""
    summary = index.explorer.summaries.get(path)
    if summary is None:
        return []
    graph = index.graph
    return [
        Link(Target.function(path, q), (Step(path, q, "is defined in the changed module"),))
        for q in summary.kinds
        if q != MODULE_SYMBOL and Target.function(path, q) in graph
    ]


def subsystem_outcome(subsystem: str, label: str, index: LinkIndex) -> Outcome:
    """A change inside a package summarized as one node: a canary aimed at the tests that
    reach the package; nothing, when no reused test reaches it."""
    target = Target("subsystem", subsystem)
    if target not in index.graph:
        return Outcome(no_effect=f"{label}: no reused test reaches {subsystem}")
    return Outcome(
        links=_subsystem_aim(subsystem),
        canary=f"{label}: inside {subsystem}, reached as a whole",
        kind="subsystem",
    )


def _templates_using(change: SymbolChange, index: LinkIndex) -> list[Link]:
    """A test class's header (class attributes, bases: every template of the class runs
    with them), or an op list a template is parametrized over (`unary_ufuncs = [...]`: its
    membership is what the template runs) -> those templates."""
    found: list[Link] = []
    for template in index.universe.templates:
        if template.file == change.path and template.test_class == change.qualname:
            how = "is the class of the template (its attributes and bases)"
        elif (
            template.op_list is not None
            and "." not in change.qualname  # a module-level list, not `OpInfo.name`
            and (change.path == template.file or is_database_file(change.path))
            and change.qualname
            in _op_list_names(template.op_list, index.universe.modules.get(template.file))
        ):
            how = f"is the op list {ast.unparse(template.op_list)} the template runs over"
        else:
            continue
        target = Target.template(template.file, template.test_class, template.method)
        found.append(Link(target, (Step(change.path, change.qualname, how),)))
    return found


def _names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _op_list_names(node: ast.expr, module: TestModule | None) -> set[str]:
    """The names an op-list expression uses, through the test file's own list definitions
    (`binary_ufuncs_with_references = list(filter(..., binary_ufuncs))`)."""
    local = module.local_names if module is not None else {}
    found: set[str] = set()
    pending = [node]
    while pending:
        for name in _names(pending.pop()):
            if name not in found:
                found.add(name)
                if name in local:
                    pending.append(local[name])
    return found


def _op_list_reach(change: SymbolChange, label: str, index: LinkIndex) -> Outcome:
    """An edit that only adds or removes ops in lists of ops (selection.python.op_lists)
    reaches where those ops run, not every user of the symbol holding the lists. Where the
    recording saw the symbol run only in compiled paths (a decomposition table), only where
    those ops are traced; for what it does not record, the blind spot and its canary."""
    how = f"modified: only its lists of ops changed: {op_list_text(change.op_list)}"
    ran = _recorded_paths(change, index)
    traced = ran is not None and not ran[0] and ran[1]
    if traced:
        how += " (recorded running only where ops are traced)"
    step = Step(change.path, change.qualname, how)
    ops = op_names(change.op_list)
    links = [Link(Target.aten(op), (step,), traced_only=traced) for op in ops]
    if not traced:
        return Outcome(links=links, kind="library")
    blind = f"{label}: its lists of ops narrowed to traced tests by the recording"
    aim = [Link(Target.aten(op), (step,)) for op in ops]
    return Outcome(links=links, kind="library", unrecorded_blind=blind, canary_aim=aim)


def _names_known_ops(change: SymbolChange, index: LinkIndex) -> bool:
    """Every op the edit adds exists in the head's native_functions.yaml: a list naming one
    that does not raises wherever it is built, for every user of the symbol."""
    native = index.explorer.native
    added = [signed[1:] for signed in change.op_list if signed.startswith("+")]
    return bool(native) and all(
        op in native or ("." not in op and op in index.explorer.aten_ops) for op in added
    )


def _recorded_paths(change: SymbolChange, index: LinkIndex) -> tuple[bool, bool] | None:
    """(ran in the eager paths, ran in the compiled paths) per the recording; None: none."""
    observed = index.observed
    if observed is None:
        return None
    path, name = change.path, change.qualname
    eager = bool(observed.pairs_running_function(path, name))
    return eager, bool(observed.pairs_running_function(path, name, compiled=True))


class SymbolLinks:
    name = "symbol"

    def __init__(self, mapped: frozenset[Target] = frozenset()) -> None:
        """`mapped`: the symbols of the change set mapped on their own
        (`mapped_on_their_own`)."""
        self.mapped = mapped

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, SymbolChange):
            return Outcome()
        label = f"{change.path}: {change.qualname} {change.kind}"
        quiet = behaviour_free(change)
        if quiet and change.qualname == "__all__":
            read, bound = _exports_read(change, index)
            if read:  # what a star import binds, a list code reads, an order checked
                names = _exported_names(change, index) if bound else Outcome(no_effect="-")
                if not bound or _imported_by_startup(change.path, index):
                    return _also_at_import(names, f"{label}: {read}")
                return names if names.links else Outcome(no_effect=f"{label}: {read}, unused")
            if change.exports != () and change.path.startswith(REFS_ROOT):
                return _refs_exports(change, label, index)
        if quiet:
            return Outcome(no_effect=f"{label}: {quiet}")
        subsystem = subsystem_of(change.path)
        if subsystem is not None:
            return _in_subsystem(change, label, subsystem, index)
        outcome = _with_refs_mode(self._reach(change, label, index), change, index)
        if _runs_at_import(change, index):
            outcome = _at_import(
                outcome, f"{label}: runs while `import torch` runs, before every test"
            )
        elif _runs_around_every_test(change, index) and not outcome.canary:
            outcome = _at_import(
                outcome,
                f"{label}: runs around every test (the test bases' set-up, tear-down or run "
                "reach it)",
            )
        return outcome

    def _reach(self, change: SymbolChange, label: str, index: LinkIndex) -> Outcome:
        test_code = is_test_path(change.path)
        kind = "helper" if test_code else "library"
        target = Target.function(change.path, change.qualname)
        if target in machinery(index) or (
            change.path in MACHINERY_FILES and change.qualname == MODULE_SYMBOL
        ):
            return Outcome(
                canary=f"{label}: instantiation machinery, reached by nearly every instance",
                kind="canary",
            )
        if change.kind == ChangeKind.removed:
            return self._removed(change, label, index)
        # with a recording, only a function it saw run: elsewhere its lists were never read,
        # and the symbol's ordinary reach says so (or links it statically)
        ran = _recorded_paths(change, index) if change.op_list else None
        if change.op_list and _names_known_ops(change, index) and (ran is None or any(ran)):
            return _op_list_reach(change, label, index)
        templates = _templates_using(change, index)
        if templates:  # and whatever else reaches the symbol (a list can also be called on)
            also = [Link(target, (Step(change.path, change.qualname, f"{change.kind}"),))]
            return Outcome(
                links=templates + (also if target in index.graph else []), kind="template"
            )
        shadowed = shadowed_aten_op(target, index.explorer.aten_ops)
        if change.kind == ChangeKind.added and not shadowed and not self._linked(target, index):
            return Outcome(
                no_effect=f"{label}: new, and nothing in the head uses it (code that starts "
                "to use it changes too, and is mapped on its own)"
            )
        if change.kind == ChangeKind.added:
            through = _through_unchanged_users(change, label, index, self.mapped, shadowed)
            if through is not None:
                return through
        if change.qualname == MODULE_SYMBOL:
            return self._module_level(change, label, index, test_code)
        link = _changed_link(change)
        conditioned = conditioned_reach(change, index)
        if conditioned is not None:
            return conditioned_outcome(conditioned, label, kind, index)
        if target in index.graph:
            return Outcome(links=[link], kind=kind)
        # no static link (a kernel called from C++, a helper reached through a dynamic
        # lookup): the recording decides for the pairs it has
        blind = f"{label}: linked to no reused test statically, only by the recording"
        recorded = _recorded(index, link, kind, blind, module_reach(index, change.path))
        if recorded is not None:
            return recorded
        device_users = index.graph.device_users.get(target)
        if device_users:
            first = device_users[0]
            return Outcome(
                no_effect=f"{label}: reached only through another device's code "
                f"({first.path}:{first.symbol} {first.how})"
            )
        if test_code:
            return Outcome(no_effect=f"{label}: no reused instance reaches it")
        if is_other_device_package(change.path):
            return Outcome(
                no_effect=f"{label}: another device's package, and no code that runs here calls it"
            )
        aimed = module_reach(index, change.path)
        blind = f"{label}: linked to no reused test statically"
        return Outcome(links=aimed, canary=blind, blind_spots=[blind], kind="canary")

    @staticmethod
    def _linked(target: Target, index: LinkIndex) -> bool:
        """Something in the head reaches it: a new function registered as an op's kernel
        (the op now runs it where traced) or called by unchanged code (a re-export)."""
        return bool(index.graph.users.get(target))

    @staticmethod
    def _removed(change: SymbolChange, label: str, index: LinkIndex) -> Outcome:
        if change.registers:
            step = Step(
                change.path,
                change.qualname,
                "removed: it was registered for "
                + ", ".join(f"aten.{op}" for op in change.registers),
            )
            return Outcome(
                links=[Link(Target.aten(op), (step,)) for op in change.registers],
                kind="library",
            )
        # what ran it now runs something else (an inherited method, a fallback) or fails,
        # whether or not its callers changed: a method call names no definition
        kind = "helper" if is_test_path(change.path) else "library"
        blind = f"{label}: removed, and recorded pairs ran it"
        aim = module_reach(index, change.path)
        recorded = _recorded(index, _changed_link(change), kind, blind, aim)
        if recorded is not None:
            return recorded
        if index.observed is None:
            method = _method_of_surviving_class(change, index)
            if method is not None:
                return method
        seen = ", and no recorded pair ran it" if index.observed is not None else ""
        return Outcome(
            no_effect=f"{label}: removed (its former users changed too, and are mapped){seen}"
        )

    def _module_level(
        self, change: SymbolChange, label: str, index: LinkIndex, test_code: bool
    ) -> Outcome:
        if is_database_file(change.path) or change.path.startswith("test/"):
            return Outcome(canary=f"{label}: module-level statements", kind="canary")
        if change.path in startup_modules(index):
            return _startup_statements(label)
        aimed = module_reach(index, change.path)
        if aimed:
            return Outcome(
                links=aimed,
                canary=f"{label}: module-level statements run when the module is imported",
                kind="canary",
            )
        if test_code:
            return Outcome(
                no_effect=f"{label}: module-level statements of a file no reused test imports"
            )
        if is_other_device_package(change.path):
            return Outcome(
                no_effect=f"{label}: module-level statements of another device's package that "
                "neither `import torch` nor code that runs here imports"
            )
        blind = f"{label}: module-level statements of a module no reused test reaches statically"
        return Outcome(canary=blind, blind_spots=[blind], kind="canary")
