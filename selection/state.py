"""What the stages share: the request and everything the stages have produced so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from selection.backend import BackendScope
from selection.device import DeviceFacts
from selection.enumerate import DeviceProfile
from selection.mapping import MapResult
from selection.model import Candidate, Cause, ChangeKind, ChangeSet, Dropped, Revision, StageReport
from selection.upstream import ParsedTrees


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
    verdict: Verdict | None = None


@dataclass
class PipelineState:
    request: SelectionRequest
    changes: ChangeSet | None = None
    mapped: MapResult | None = None
    candidates: dict[str, Candidate] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    reused_total: int = 0  # instances the backend reuses (the denominator of the ratio)
    reports: list[StageReport] = field(default_factory=list)
    blind_spots: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    progress: Callable[[str], None] | None = None
    context: dict[str, object] = field(default_factory=dict)  # universe, db, graph, ...

    def pass_through(self, stage: str) -> StageReport:
        """What a disabled stage leaves behind (documented in selection.hooks)."""
        from selection.stages import PASS_THROUGH

        return PASS_THROUGH[stage](self) if stage in PASS_THROUGH else StageReport(stage)
