"""What the stages share: the request and everything the stages have produced so far.

Typed fields, one per product, written by the stage that owns it (selection.hooks lists
who reads and writes what)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from selection.backend import BackendScope
from selection.device import DeviceFacts
from selection.enumerate import DeviceProfile
from selection.mapping import MapResult
from selection.model import (
    Candidate,
    Cause,
    ChangeKind,
    ChangeSet,
    Dropped,
    Revision,
    StageReport,
    TestInstance,
)
from selection.upstream import ParsedTrees

if TYPE_CHECKING:
    from selection.detect import Detector
    from selection.links.index import LinkIndex
    from selection.links.native_calls import NativeCalls
    from selection.observed import ObservedMap
    from selection.oplists import OpDatabase
    from selection.sources.analysis_cache import AnalysisCache
    from selection.universe import Universe


@dataclass
class SelectionRequest:
    base: Revision
    head: Revision
    base_trees: ParsedTrees
    head_trees: ParsedTrees
    changed_paths: list[tuple[str, ChangeKind]]
    backend: BackendScope
    device: DeviceProfile = field(default_factory=DeviceProfile)
    widen: str = "canary"  # canary | full
    mode: str = "release"  # release | range | pr | diff
    facts: DeviceFacts = field(default_factory=DeviceFacts)
    observed: ObservedMap | None = None  # the recorded dependency map, when there is one
    # paths a --diff changes that the base tree lacks (a release wheel has no test/ and no
    # C++): their hunks cannot be analysed, so their dependents are widened (detect stage)
    unanalysed: list[str] = field(default_factory=list)
    base_is_release: bool = False  # the base is a release mirrored from its wheel
    cache: AnalysisCache | None = None
    # the C++ calls between ops of the head's release library (selection.links.native_calls)
    native_calls: NativeCalls | None = None
    # what was said of them ("" when the head is a clone: the map stage reads its C++ source)
    native_calls_note: str = ""


@dataclass
class Verdict:
    decision: str  # run | not_needed | manifest_change
    rationale: str
    confidence: float
    priority: float = 0.5
    agent: str = "deterministic"
    fallback_reason: str = ""


@dataclass
class Group:
    """Candidates sharing a root cause: the unit the triage agent decides on."""

    group_id: str
    cause: Cause
    node_ids: list[str] = field(default_factory=list)
    templates: set[str] = field(default_factory=set)
    ops: set[str] = field(default_factory=set)
    dtypes: set[str] = field(default_factory=set)
    modes: set[str] = field(default_factory=set)
    # A derivative change reaching only templates whose bodies compute no gradients.
    gradient_free: bool = False
    # A change confined to failing paths reaching only templates that handle no errors.
    error_free: bool = False
    verdict: Verdict | None = None


@dataclass
class PipelineState:
    request: SelectionRequest
    progress: Callable[[str], None] | None = None
    file_progress: Callable[[int, int], None] | None = None
    # detect
    changes: ChangeSet | None = None
    detector: Detector | None = None
    # map (the database and universe are built on first use, by any stage)
    db: OpDatabase | None = None
    universe: Universe | None = None
    links: LinkIndex | None = None
    mapped: MapResult | None = None
    candidates: dict[str, Candidate] = field(default_factory=dict)
    # scope
    reused: list[TestInstance] = field(default_factory=list)
    reused_total: int = 0  # instances the backend reuses (the denominator of the ratio)
    # triage
    groups: list[Group] = field(default_factory=list)
    manifest_findings: list[str] = field(default_factory=list)
    # every stage
    dropped: list[Dropped] = field(default_factory=list)
    reports: list[StageReport] = field(default_factory=list)
    blind_spots: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def pass_through(self, stage: str) -> StageReport:
        """What a disabled stage leaves behind (documented in selection.hooks)."""
        from selection.stages import PASS_THROUGH

        return PASS_THROUGH[stage](self) if stage in PASS_THROUGH else StageReport(stage)

    def database(self) -> OpDatabase:
        if self.db is None:
            from selection.upstream import load_database

            self.db = load_database(self.request.head_trees)
        return self.db

    def instances(self) -> Universe:
        """The upstream instances of the reused files (built once, blind spots recorded)."""
        if self.universe is None:
            from selection.universe import build_universe

            request = self.request
            self.universe = build_universe(
                request.head_trees, self.database(), request.backend, request.device
            )
            self.blind_spots.extend(self.universe.blind_spots)
        return self.universe

    def link_index(self) -> LinkIndex:
        if self.links is None:
            from selection.links.index import LinkIndex

            request = self.request
            self.links = LinkIndex(
                request.head_trees,
                request.base_trees,
                self.database(),
                self.instances(),
                request.facts,
                request.observed,
                request.cache,
                request.native_calls,
            )
        return self.links
