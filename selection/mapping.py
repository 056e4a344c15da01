"""Stage 2 logic: compose the link kinds over every detected change. Pure.

Each change is offered to the link kinds (selection.links) in order; the first that decides
gives its Outcome: links resolved to instances (each recorded with the detect cause and a
map cause carrying the evidence chain and its basis), a canary (aimed at what the links
reach, or stratified over everything), a blind spot, or "no effect" with its reason. A
change no kind decides is never silent: it becomes a blind spot covered by the canary. A
change reaching more than half of all instances is treated as machinery: a canary aimed at
what it reaches. An unparseable file widens its dependents.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from selection.links.argument_reach import values_note
from selection.links.base import Link, LinkKind, Outcome, Step, Target
from selection.links.cpp import CppLinks
from selection.links.dtype_helpers import DtypeHelperLinks
from selection.links.entry_changes import EntryLinks
from selection.links.file_changes import FileLinks
from selection.links.graph import DERIVATIVE, Edge
from selection.links.index import LinkIndex
from selection.links.native_changes import NativeLinks, native_summary
from selection.links.resolve import Resolution, doubt_aims, resolve
from selection.links.symbol_changes import SymbolLinks, mapped_on_their_own
from selection.links.template_changes import TemplateLinks
from selection.model import (
    Candidate,
    Cause,
    ChangeKind,
    ChangeSet,
    EntryChange,
    FileChange,
    SymbolChange,
    TestInstance,
)
from selection.python.failure_paths import FAILURE_PATH, FAILURE_PATH_NOTE
from selection.python.op_lists import op_list_text

MAX_CAUSES = 4  # changes named per test (each a detect and a map link)
NEARLY_ALL = 0.5  # a change reaching more than half of the instances is machinery


@dataclass
class Canary:
    """A stratified canary: one instance per (file, class, template, dtype) stratum of the
    reused instances within `aim` (every reused instance when `aim` is None), for every change
    in `causes` (changes aiming at the same tests share one canary). `per_op`: one per (op,
    dtype) pair too, for machinery (unaimed, or reaching more than half of the instances):
    what builds per-op state (a registration helper, a decomposition table) can break any op,
    so every op runs once per dtype."""

    causes: list[Cause]
    aim: frozenset[str] | None = None
    per_op: bool = False

    @property
    def cause(self) -> Cause:
        if len(self.causes) == 1:
            return self.causes[0]
        first = self.causes[0].summary
        return Cause("map", "canary", f"{len(self.causes)} changes, e.g. {first}")


@dataclass
class MapResult:
    candidates: dict[str, Candidate] = field(default_factory=dict)
    canaries: list[Canary] = field(default_factory=list)
    no_effect: list[str] = field(default_factory=list)  # changes that affect nothing here, why
    blind_spots: list[str] = field(default_factory=list)
    removed_entries: list[EntryChange] = field(default_factory=list)
    removed_templates: list[SymbolChange] = field(default_factory=list)
    observed_instances: int = 0  # instances whose link came from the recorded map
    decided: int = 0  # changes with an outcome (every detected change has one)

    @property
    def canary_causes(self) -> list[Cause]:
        return [cause for c in self.canaries for cause in c.causes]


def default_kinds(changes: ChangeSet, device: str = "spyre") -> list[LinkKind]:
    sources = {n.source for n in changes.native}
    with_changes = (
        {s.path for s in changes.symbols}
        | {e.path for e in changes.entries}
        | {f.path for f in changes.files if f.analysed == "native" and _source(f.path) in sources}
        | {c.path for c in changes.cpp}
    )
    return [
        TemplateLinks(changes.templates),
        EntryLinks(),
        NativeLinks(),
        CppLinks(),
        DtypeHelperLinks(device),
        SymbolLinks(mapped_on_their_own(changes.symbols)),
        FileLinks(with_changes),
    ]


def _source(path: str) -> str:
    return "derivatives" if path.endswith("derivatives.yaml") else "native_functions"


def _items(changes: ChangeSet) -> Iterator[tuple[object, Cause]]:
    """Every detected change with its detect cause, finest first."""
    for symbol in changes.symbols:
        summary = f"{symbol.path}: {symbol.qualname} {symbol.kind}"
        if symbol in changes.templates:
            yield symbol, Cause("detect", "template", summary)
        elif symbol.failure_only:
            yield symbol, Cause("detect", FAILURE_PATH, f"{summary} {FAILURE_PATH_NOTE}")
        elif symbol.unchanged_for:
            yield (
                symbol,
                Cause("detect", "symbol", f"{summary} {values_note(symbol.unchanged_for)}"),
            )
        elif symbol.op_list:
            note = f"(only its lists of ops: {op_list_text(symbol.op_list)})"
            yield symbol, Cause("detect", "symbol", f"{summary} {note}")
        else:
            yield symbol, Cause("detect", "symbol", summary)
    for entry in changes.entries:
        label = "ModuleInfo" if entry.database == "moduleinfo" else "OpInfo"
        details = "; ".join(f.detail for f in entry.fields[:3] if not f.other_device_only)
        summary = f"{label} {entry.full_name!r} {entry.kind}" + (f": {details}" if details else "")
        yield entry, Cause("detect", "entry", summary)
    for cpp in changes.cpp:
        yield cpp, Cause("detect", "cpp", cpp.summary)
    for native in changes.native:
        yield native, Cause("detect", "native", native_summary(native))
    for file in changes.files:
        if not file.parse_error:
            yield file, Cause("detect", "file", f"{file.path} {file.kind}")


class Mapper:
    def __init__(
        self,
        changes: ChangeSet,
        index: LinkIndex,
        kinds: Iterable[LinkKind] | None = None,
        reused: frozenset[str] | None = None,
        device: str = "spyre",
    ) -> None:
        """`reused`: the node ids the backend runs, against which "nearly all" is measured
        (every enumerated instance when not given)."""
        self.changes, self.index = changes, index
        self.kinds = list(kinds) if kinds is not None else default_kinds(changes, device)
        self.result = MapResult()
        self.reused = reused
        self.total = max(1, len(reused) if reused is not None else len(index.universe.instances))
        # canaries by what they aim at: the roots reached (graph bits) and direct instances
        self._canaries: dict[object, Canary] = {}
        self._full: set[int] = set()  # ids of pair instance lists whose instances are full
        self._any_unrecorded: bool | None = None  # memo of _unrecorded_reused

    def run(self) -> MapResult:
        self._removed()
        for change, detect in _items(self.changes):
            outcome = self._outcome(change)
            if outcome is None:
                continue  # a file whose finer changes were mapped on their own
            self.result.decided += 1
            self._apply(outcome, detect)
        self._unparseable()
        return self.result

    def _removed(self) -> None:
        self.result.removed_entries = [
            e for e in self.changes.entries if e.kind == ChangeKind.removed
        ]
        self.result.removed_templates = [
            t for t in self.changes.templates if t.kind == ChangeKind.removed
        ]

    def _outcome(self, change: object) -> Outcome | None:
        for kind in self.kinds:
            outcome = kind.reach(change, self.index)
            if outcome.decided:
                return outcome
        if isinstance(change, FileChange):
            return None
        if isinstance(change, EntryChange) and change.kind == ChangeKind.removed:
            return Outcome(no_effect="removed upstream (a manifest finding if a manifest names it)")
        label = getattr(change, "path", type(change).__name__)
        blind = f"{label}: no link kind handles this change"
        return Outcome(canary=blind, blind_spots=[blind], kind="canary")

    # -- applying an outcome -------------------------------------------------------------------
    def _apply(self, outcome: Outcome, detect: Cause) -> None:
        if outcome.no_effect:
            self.result.no_effect.append(outcome.no_effect)
            return
        self.result.blind_spots.extend(outcome.blind_spots)
        if outcome.load_time:
            self._canary(Cause("map", "canary", outcome.load_time), None)
            if not (outcome.links or outcome.canary):
                return
        if outcome.unrecorded_blind and self._unrecorded_reused():
            self._unrecorded_canary(outcome)
        elif outcome.beside:
            self._aimed_canary(outcome.beside, outcome.canary_aim)
        if not outcome.links:
            self._canary(Cause("map", "canary", outcome.canary), None)
            return
        limit = -1 if outcome.canary else int(NEARLY_ALL * self.total)
        resolution = resolve(outcome.links, self.index, limit, self.reused)
        if resolution.doubts:
            self._doubts_canary(resolution.doubts, detect)
        if not (resolution.listed or resolution.count):
            # else the canary over every test is its effect, or the doubts' canary
            if not (outcome.load_time or resolution.doubts):
                self.result.no_effect.append(
                    f"{outcome.canary or detect.summary}: no reused instance reaches it"
                )
            return
        if outcome.canary or resolution.broad:
            summary = outcome.canary or (
                f"{detect.summary}: reaches {resolution.count} of the {self.total} reused instances"
            )
            # past half of the instances it is machinery (an aimed canary is not)
            self._canary(Cause("map", "canary", summary), resolution, per_op=not outcome.canary)
            return
        self.result.observed_instances += resolution.observed
        if not resolution.listed:  # every static link was a recorded pair that ran none of it
            self.result.no_effect.append(
                f"{detect.summary}: linked statically, but no recorded (op, dtype) pair ran it "
                f"({resolution.count} instances ruled out by the recording)"
            )
            return
        # One Cause per link, shared by the instances it reaches (a link reaches every
        # instance of its root: hundreds of thousands of identical causes otherwise).
        causes: dict[int, tuple[Link, Cause]] = {}
        for inst, link in resolution.reached.values():
            self._hit_once(inst, detect, link, outcome.kind, causes)
        for target, path, instances in resolution.by_pair:
            if id(instances) in self._full:
                continue  # every instance of the pair names enough changes already
            full, link = True, resolution.pair_link(target, path)
            for inst in instances:
                if inst.node_id in resolution.reached:  # hit above, through another link
                    full &= self._names_enough(inst)
                else:
                    full &= self._hit_once(inst, detect, link, outcome.kind, causes)
            if full:
                self._full.add(id(instances))  # the lists are the index's, shared

    def _doubts_canary(self, doubts: list[Edge], detect: Cause) -> None:
        """A changed default's callers that passed the argument in the older source their
        counts were recorded from: a blind spot, and a canary over the tests nearest them,
        one per op and dtype (a kernel that omits it now breaks its own op first)."""
        aims = doubt_aims(doubts, self.index, self.reused)
        native = self.index.native_calls
        source = native.arguments_from if native is not None else "an older source"
        blind = f"{detect.summary}: {doubted_callers(doubts, aims, source)}"
        self.result.blind_spots.append(blind)
        ids = tuple(dict.fromkeys(i for aim in aims.values() for i in aim))
        if ids:
            label = "the tests nearest " + ", ".join(c for c, aim in aims.items() if aim)
            self._aimed_canary(blind, [Link(Target.instances(label, ids))], per_op=True)

    def _unrecorded_reused(self) -> bool:
        """Does a reused instance lack a recording: its (op, dtype) pair has none, or it has
        no pair (a template's own code is never recorded)?"""
        observed = self.index.observed
        if observed is None:
            return True
        if self._any_unrecorded is None:
            reused = self.reused
            self._any_unrecorded = any(
                i.op is None or i.dtype is None
                or (i.database, i.op, i.dtype) not in observed.recorded
                for i in self.index.universe.instances
                if reused is None or i.node_id in reused
            )  # fmt: skip
        return self._any_unrecorded

    def _unrecorded_canary(self, outcome: Outcome) -> None:
        """The blind spot of a change only the recording links, and its canary (aimed as a
        blind spot's is), beside what the recording reaches."""
        blind = f"{outcome.unrecorded_blind} (what the recording does not cover is not linked)"
        self.result.blind_spots.append(blind)
        self._aimed_canary(blind, outcome.canary_aim)

    def _aimed_canary(self, summary: str, aim_links: list[Link], per_op: bool = False) -> None:
        """A canary aimed at what `aim_links` reach (every reused test without any)."""
        aim = None
        if aim_links:
            aim = resolve(aim_links, self.index, -1, self.reused)
            if not (aim.count or aim.listed):
                return  # it reaches no reused instance at all
        self._canary(Cause("map", "canary", summary), aim, per_op)

    def _canary(self, cause: Cause, resolution: Resolution | None, per_op: bool = False) -> None:
        """Changes aiming at the same tests share one canary: keyed by the roots reached
        (and the instances named directly), its set of ids built once. `per_op` (an unaimed
        canary always is): see Canary."""
        key = (
            None
            if resolution is None
            else (
                resolution.bits,
                tuple(sorted(resolution.reached)),
                resolution.observed_runs,
                tuple(id(instances) for _, _, instances in resolution.by_pair),
            )
        )
        canary = self._canaries.get(key)
        if canary is None:
            aim = None if resolution is None else resolution.node_ids(self.index)
            canary = self._canaries[key] = Canary([], aim)
            self.result.canaries.append(canary)
        canary.per_op |= per_op or resolution is None
        canary.causes.append(cause)

    def _hit_once(
        self,
        inst: TestInstance,
        detect: Cause,
        link: Link,
        kind: str,
        causes: dict[int, tuple[Link, Cause]],
    ) -> bool:
        """`_hit` with the link's cause built once per link, and only for an instance that
        does not name enough changes yet. Whether it names enough now. `causes` is keyed by
        the link's id and keeps the link alive: links made on demand (`pair_link`) would
        otherwise free their id for the next pair's link, which then showed this cause."""
        candidate = self.result.candidates.get(inst.node_id)
        if candidate is None or len(candidate.causes) < MAX_CAUSES * 2:
            known = causes.get(id(link))
            if known is None:
                known = causes[id(link)] = (link, map_cause(kind, link))
            self._hit(inst, detect, known[1])
        return self._names_enough(inst)

    def _names_enough(self, inst: TestInstance) -> bool:
        """Does the instance's candidate name MAX_CAUSES changes already?"""
        candidate = self.result.candidates.get(inst.node_id)
        return candidate is not None and len(candidate.causes) >= MAX_CAUSES * 2

    def _hit(self, inst: TestInstance, detect: Cause, how: Cause) -> None:
        candidate = self.result.candidates.get(inst.node_id)
        if candidate is None:
            candidate = self.result.candidates[inst.node_id] = Candidate(inst)
        if len(candidate.causes) < MAX_CAUSES * 2:
            candidate.causes.extend((detect, how))

    def _unparseable(self) -> None:
        for file in self.changes.unparseable:
            detect = Cause("detect", "unparseable", file.path)
            how = Cause(
                "map",
                "widen",
                f"could not be analysed ({file.parse_error}): its dependents run",
            )
            if file.path.startswith("test/"):
                instances = [i for i in self.index.universe.instances if i.file == file.path]
            else:
                instances = self.index.universe.instances
            for inst in instances:
                self._hit(inst, detect, how)


def map_cause(kind: str, link: Link) -> Cause:
    """The map link of a cause chain: how the change reaches this test, with the evidence."""
    if "derivative" in link.kinds:
        kind = "derivative"  # only matters when gradients are computed
    evidence = tuple(str(step) for step in link.evidence)
    root = link.target
    if root.kind == "entry":
        label = f"{'ModuleInfo' if root.scope == 'moduleinfo' else 'OpInfo'} {root.full_name!r}"
    elif root.kind == "template":
        label = f"template {root.scope}.{root.name}"
    else:
        label = root.name
    # the first hop past the change, with its subject where it is not the root itself
    # (`torch/backends/cuda/__init__.py:matmul calls cuBLASModule`, not `calls cuBLASModule`
    # beside an OpInfo that does not call it); the whole chain is the evidence
    first = link.evidence[1] if len(link.evidence) > 1 else None
    via = (
        f"{_subject(first, root)}{first.how}"
        if first is not None
        else (link.evidence[0].how if link.evidence else "")
    )
    hops = len(link.kinds)
    summary = f"{label}" + (
        f" ({hops} link{'s' if hops != 1 else ''}: {via})" if hops else f": {via}"
    )
    return Cause("map", kind or "link", summary, evidence, link.basis)


def _subject(step: Step, root: Target) -> str:
    """`path:symbol ` of a hop, or nothing for the root's own hop: an entry's
    (`OpInfo('add')`), a template's body (its label names it)."""
    own_template = root.kind == "template" and step.symbol == f"{root.scope}.{root.name}"
    if not step.symbol or "(" in step.symbol or own_template:
        return ""
    return f"{step.path}:{step.symbol} "


def doubted_callers(doubts: list[Edge], aims: Mapping[str, tuple[str, ...]], source: str) -> str:
    """`3 calling ops (composite or meta kernels) passed the argument at every call in
    <source>; ...: a canary runs the tests nearest 2 of them (narrow, select); no reused test
    is near 1 (istft)`."""
    kinds = sorted({"backward formulas' C++ helpers" if edge.kind == DERIVATIVE else
                    "composite or meta kernels" for edge in doubts})  # fmt: skip
    near = [caller for caller, aim in aims.items() if aim]
    far = [caller for caller, aim in aims.items() if not aim]
    ops = "1 calling op" if len(aims) == 1 else f"{len(aims)} calling ops"
    text = (
        f"{ops} ({' and '.join(kinds)}) passed the argument at every call in {source}; the "
        "release's library cannot tell whether they still do"
    )
    if not near:
        return (
            f"{text}; no reused test is near any of them ({', '.join(far)}): nothing runs for them"
        )
    text += f": a canary runs the tests nearest {len(near)} of them ({', '.join(near)})"
    return text + (f"; no reused test is near {len(far)} ({', '.join(far)})" if far else "")
