"""The four built-in stages, registered on the hook contract of `selection.hooks`."""

from __future__ import annotations

from collections.abc import Callable

from selection.hooks import StageRegistry
from selection.model import Candidate, Cause, StageReport
from selection.stages.detect import DetectStage
from selection.stages.map import MapStage
from selection.stages.scope import ScopeStage
from selection.stages.triage import TriageStage
from selection.state import PipelineState

__all__ = [
    "PASS_THROUGH",
    "DetectStage",
    "MapStage",
    "ScopeStage",
    "TriageStage",
    "default_registry",
]


def default_registry(triage: TriageStage | None = None) -> StageRegistry:
    return StageRegistry([DetectStage(), MapStage(), ScopeStage(), triage or TriageStage()])


def _map_all(state: PipelineState) -> StageReport:
    universe = state.instances()
    cause = Cause("map", "disabled", "map stage disabled: every enumerated instance is a candidate")
    state.candidates = {i.node_id: Candidate(i, [cause]) for i in universe.instances}
    return StageReport("map", {"candidates": len(state.candidates)}, ["disabled"])


def _keep_all(state: PipelineState) -> StageReport:
    return StageReport("scope", {"kept": len(state.candidates)}, ["disabled: nothing filtered"])


def _run_all(state: PipelineState) -> StageReport:
    return StageReport("triage", {"run": len(state.candidates)}, ["disabled: everything runs"])


def _no_changes(state: PipelineState) -> StageReport:
    from selection.model import ChangeSet

    state.changes = ChangeSet(state.request.base, state.request.head)
    return StageReport("detect", {"files": 0}, ["disabled: empty change set"])


PASS_THROUGH: dict[str, Callable[[PipelineState], StageReport]] = {
    "detect": _no_changes,
    "map": _map_all,
    "scope": _keep_all,
    "triage": _run_all,
}
