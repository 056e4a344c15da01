"""C++ links: a changed ATen / FunctionsManual definition -> the ATen ops that run it.

On the LinkKind contract (selection.links.base): `reach(change, index)` gives the Outcome
the Map stage composes; `explain(change, index)` gives its parts: the links, why nothing is
reached (`no_effect`), a canary cause (`canary`: ATen/c10 core, or a reach too wide to
follow) and blind spots (callers that could not be read, a change no caller reaches).

Evidence, first hop to last, e.g. for `add_kernel` in native/cpu/BinaryOpsKernel.cpp:
    native/cpu/BinaryOpsKernel.cpp:REGISTER_DISPATCH(add_stub) registers add_kernel for add_stub (CPU)
    native/BinaryOps.cpp:at::native::TORCH_IMPL_FUNC(add_out) calls add_stub
    native/native_functions.yaml:add.Tensor dispatch CPU: add_out (structured; ...)
A link through a derivatives.yaml formula ends with a step in derivatives.yaml and only
matters where gradients are computed: `is_gradient_only(link)`.

Indexes (native_functions.yaml, derivatives.yaml, the C++ corpus) are built from the head
tree on first use and memoized on the LinkIndex.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from selection.cpp.blind_spot import CppBlindSpot, release_blind_spot
from selection.cpp.corpus import CppCorpus
from selection.cpp.detect import WHOLE_FILE
from selection.cpp.items import CppItem
from selection.cpp.native_index import (
    DERIVATIVES_PATHS,
    NATIVE_FUNCTIONS_PATHS,
    FormulaIndex,
    NativeIndex,
    build_formula_index,
    build_native_index,
)
from selection.cpp.reach import MAX_VISITED, reach_ops
from selection.cpp.scan import definitions_by_scan
from selection.cpp.source_calls import SourceCode
from selection.links.base import Link, Outcome, Target
from selection.links.index import LinkIndex
from selection.links.native_calls import DECIDERS, NOTE_PREFIX, NativeCalls, native_call_uses
from selection.model import ChangeKind, CppChange
from selection.native_yaml import NativeYamlError
from selection.sources.analysis_cache import modules_digest

T = TypeVar("T")
CORE_CANARY = (
    "ATen/c10 core C++ (TensorIterator, dispatcher, vectorized math, ...): "
    "reached by nearly every op"
)


@dataclass
class CppReached:
    links: list[Link] = field(default_factory=list)
    no_effect: str = ""  # a reason, when the change reaches nothing by design
    canary: str = ""  # a canary cause, when the change is not mapped op by op
    blind_spots: list[str] = field(default_factory=list)


@dataclass
class CppIndexes:
    native: NativeIndex | None
    formulas: FormulaIndex
    problem: str = ""  # why C++ cannot be linked in this revision, when it cannot


def is_gradient_only(link: Link) -> bool:
    """The link goes through a derivatives.yaml formula: only gradient computations run it."""
    return any(step.path in DERIVATIVES_PATHS for step in link.evidence)


def cpp_indexes(index: LinkIndex) -> CppIndexes:
    return index.memo("selection.links.cpp.cpp_indexes", lambda: _build_indexes(index))


def cpp_corpus(index: LinkIndex) -> CppCorpus:
    return index.memo("selection.links.cpp.cpp_corpus", lambda: CppCorpus(index.head.tree))


def _build_indexes(index: LinkIndex) -> CppIndexes:
    problems: list[str] = []
    native = _first_yaml(index, NATIVE_FUNCTIONS_PATHS, build_native_index, problems)
    formulas = _first_yaml(index, DERIVATIVES_PATHS, build_formula_index, problems)
    if native is None and not problems:
        problems.append("native_functions.yaml is not in the head revision")
    return CppIndexes(native, formulas or FormulaIndex(), "; ".join(problems))


def _first_yaml(
    index: LinkIndex,
    paths: tuple[str, ...],
    build: Callable[[str, str], T],
    problems: list[str],
) -> T | None:
    """The index built from the first of `paths` the head has (a clone's, then a wheel's)."""
    for path in paths:
        text = index.head.tree.read(path)
        if text is not None:
            try:
                return build(text, path)
            except NativeYamlError as exc:
                problems.append(str(exc))
                return None
    return None


def in_scope_aten(index: LinkIndex) -> set[str]:
    """ATen base names of the ops the universe's instances test: each entry's `aten_name`
    (or its name's last component) and what the capability file says it lowers to."""
    ops = {inst.op for inst in index.universe.instances if inst.op}
    names: set[str] = set()
    for entry in index.db.entries.values():
        if entry.full_name in ops:
            names.update({entry.aten_name, entry.name.rsplit(".", 1)[-1]})
    for aten, lowered_from in index.facts.ops_by_aten.items():
        if any(op in ops for op in lowered_from):
            names.add(aten)
    return names


def head_native_calls(index: LinkIndex) -> NativeCalls | None:
    """The C++ calls between ops (selection.links.native_calls) of the head: a release's,
    read from its library by the pipeline (`index.native_calls`); a clone's, read here from
    its C++ source (kept in the analysis cache under the files' blob ids); None for neither."""
    if index.native_calls is not None:
        return index.native_calls
    if index.head.tree.read(NATIVE_FUNCTIONS_PATHS[0]) is None:
        return None  # no clone: a release mirror has no C++ source
    indexes = cpp_indexes(index)
    if indexes.native is None:
        return None
    corpus = cpp_corpus(index)
    tree = index.head.tree
    ids = hashlib.sha256()
    for path in [*corpus.paths(), NATIVE_FUNCTIONS_PATHS[0], DERIVATIVES_PATHS[0]]:
        ids.update(f"{path}\0{tree.content_id(path)}\0".encode())
    cache = index.cache
    version = modules_digest(DECIDERS)
    key = cache.key("native-calls-source", version, ids.hexdigest()) if cache is not None else ""
    cached = cache.get(key) if cache is not None else None
    if isinstance(cached, NativeCalls):
        return cached
    ops = indexes.native.overloads
    code = SourceCode(corpus, set(ops), "the head's C++ source (aten/src/ATen/native)")
    found = native_call_uses(code, indexes.native, indexes.formulas, ops)
    if cache is not None:
        cache.put(key, found)
    return found


def clone_calls_note(index: LinkIndex) -> str:
    """The run's note on a clone's C++ calls between ops: what was read, or why nothing was."""
    calls = index.explorer.native_calls
    if calls is not None:
        return calls.describe()
    if index.head.tree.read(NATIVE_FUNCTIONS_PATHS[0]) is None:
        return f"{NOTE_PREFIX}: the head has no {NATIVE_FUNCTIONS_PATHS[0]}"
    return f"{NOTE_PREFIX}: {cpp_indexes(index).problem or 'none read'}"


def release_cpp_blind_spot(index: LinkIndex) -> CppBlindSpot | None:
    """For release mode (the Map stage adds `.text` to the blind spots); None when the head
    has no native_functions.yaml to count from."""
    indexes = cpp_indexes(index)
    if indexes.native is None:
        return None
    return release_blind_spot(indexes.native, indexes.formulas, in_scope_aten(index))


class CppLinks:
    name = "cpp"

    def __init__(self, max_visited: int = MAX_VISITED) -> None:
        self.max_visited = max_visited

    def reach(self, change: object, index: LinkIndex) -> Outcome:
        if not isinstance(change, CppChange):
            return Outcome()
        found = self.explain(change, index)
        links = [
            Link(link.target, link.evidence, link.basis, ("derivative",))
            if is_gradient_only(link)
            else link
            for link in found.links
        ]
        no_effect = f"{change.summary}: {found.no_effect}" if found.no_effect else ""
        return Outcome(links, no_effect, found.canary, list(found.blind_spots), kind="cpp")

    def explain(self, change: object, index: LinkIndex) -> CppReached:
        if not isinstance(change, CppChange):
            return CppReached()
        if change.no_effect:
            return CppReached(no_effect=change.no_effect)
        if change.area == "core":
            return CppReached(canary=f"{change.summary}: {CORE_CANARY}")
        indexes = cpp_indexes(index)
        if indexes.native is None:
            spot = f"{change.summary}: C++ not linked ({indexes.problem})"
            return CppReached(canary=spot, blind_spots=[spot])
        corpus = cpp_corpus(index)
        start = _start_items(change, corpus, index)
        reach = reach_ops(start, corpus, indexes.native, indexes.formulas, self.max_visited)
        links = [Link(Target.aten(o.op), o.evidence) for o in reach.ops]
        out = CppReached(links=links)
        out.blind_spots = [
            f"{path} could not be read ({error}): callers of {change.function} in it are not linked"
            for path, error in reach.unreadable
            if path != change.path
        ]
        if change.parse_error:
            out.blind_spots.append(
                f"{change.path} could not be read ({change.parse_error}): linked through the "
                f"{len(start)} names it appears to define"
            )
        if reach.truncated:
            out.canary = (
                f"{change.summary}: reaches more than {self.max_visited} C++ definitions "
                f"({len(links)} ops so far): treated as core"
            )
        elif not links:
            names = {n for _, item in start for n in item.lookup_names}
            # Used by no definition of ours at all, but by another device's files: theirs.
            others = corpus.other_device_mentions(names) if reach.visited == len(start) else []
            _nothing_reached(out, change, reach.other_keys, others, index)
        return out


def _nothing_reached(
    out: CppReached,
    change: CppChange,
    other_keys: list[str],
    other_files: list[str],
    index: LinkIndex,
) -> None:
    if other_keys:
        shown = "; ".join(dict.fromkeys(other_keys[:3]))
        out.no_effect = f"only another device's or layout's kernels run it ({shown})"
    elif other_files and not change.parse_error:
        shown = ", ".join(other_files[:3]) + (", ..." if len(other_files) > 3 else "")
        out.no_effect = f"only another device's code uses it ({shown})"
    elif change.kind == ChangeKind.added and change.role not in ("file", "directives"):
        out.no_effect = "added, and no kernel uses it yet (its users changed too, and are linked)"
    elif change.parse_error:
        node_ids = tuple(inst.node_id for inst in index.universe.instances)
        out.links.append(Link(Target.instances(f"{change.path} unreadable", node_ids)))
    else:
        spot = (
            f"{change.summary}: no kernel, dispatch stub or derivative formula reaches it "
            "from aten/src/ATen/native or FunctionsManual.cpp"
        )
        out.blind_spots.append(spot)
        out.canary = spot


def _start_items(
    change: CppChange, corpus: CppCorpus, index: LinkIndex
) -> list[tuple[str, CppItem]]:
    """The definitions a change starts from: the head's (the base's when removed), the whole
    file for a file-wide change, names found by scanning for an unreadable file."""
    path = change.path
    if change.function == WHOLE_FILE:
        text = index.head.tree.read(path) or index.base.tree.read(path) or ""
        return [(path, _named(path, name)) for name in definitions_by_scan(text)]
    items = corpus.file(path).items
    if change.role == "directives" or (change.role == "declaration" and not change.name):
        # `#if` structure, `using namespace vec;`: what it affects is the file's definitions
        return [(path, item) for item in items.values()]
    item = items.get(change.key)
    if item is None:  # removed: only what the change says about it is known
        item = CppItem(change.key, change.function, change.name, change.role, change.line, "",
                       defines=change.defines, file_local=change.file_local)  # fmt: skip
    return [(path, item)]


def _named(path: str, name: str) -> CppItem:
    return CppItem(f"{path}::{name}", name, name, "invocation", 0, "", defines=(name,))
