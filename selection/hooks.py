"""The stage hook contract: every stage, built-in or third-party, is a plugin on it.

A stage is any object with a `name` and `run(state) -> StageReport`. Stages run in
registration order over one `PipelineState`; each reads what earlier stages wrote and
writes its own part:

| stage   | reads                                     | writes (typed fields of PipelineState)          |
|---------|-------------------------------------------|-------------------------------------------------|
| detect  | request (trees, changed paths, cache)     | changes (ChangeSet), detector                   |
| map     | changes; db, universe, links (built once) | mapped (MapResult), candidates, reused           |
| scope   | candidates, reused, backend manifests     | candidates (kept, with mode), dropped, reused_total |
| triage  | candidates, universe                      | groups, manifest_findings, candidates (ranked), dropped |

A stage can be disabled by name (`--disable-stage map`); the pipeline then applies the
documented pass-through (map: every enumerated instance is a candidate; scope: keep all;
triage: run all). Third-party stages are found through the `spyre_ci.selection_stages`
entry-point group and are appended after the built-in ones unless they name an `after`.
Each report's `counts` appear in selection.json and the reports; nothing a stage drops
may leave without a `Dropped` record carrying its reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol

from selection.model import StageReport

if TYPE_CHECKING:
    from selection.state import PipelineState

ENTRY_POINT_GROUP = "spyre_ci.selection_stages"


class Stage(Protocol):
    name: str

    def run(self, state: PipelineState) -> StageReport: ...


def _silently_dropped(before: set[str], state: PipelineState) -> list[str]:
    recorded = {d.node_id for d in state.dropped}
    return sorted(before - set(state.candidates) - recorded)


class UnknownStage(ValueError):
    """--disable-stage named a stage that is not registered."""


class StageRegistry:
    def __init__(self, stages: Iterable[Stage] = ()) -> None:
        self.stages: list[Stage] = list(stages)
        self.disabled: set[str] = set()

    def register(self, stage: Stage, after: str | None = None) -> None:
        if after is None:
            self.stages.append(stage)
            return
        names = [s.name for s in self.stages]
        self.stages.insert(names.index(after) + 1 if after in names else len(names), stage)

    def load_entry_points(self) -> None:
        for point in entry_points(group=ENTRY_POINT_GROUP):
            stage = point.load()()
            self.register(stage, getattr(stage, "after", None))

    def disable(self, names: Iterable[str]) -> None:
        known = {s.name for s in self.stages}
        for name in names:
            if name not in known:
                raise UnknownStage(
                    f"unknown stage {name!r}; stages are: {', '.join(sorted(known))}"
                )
            self.disabled.add(name)

    def run(self, state: PipelineState) -> list[StageReport]:
        reports: list[StageReport] = []
        for stage in self.stages:
            start = time.perf_counter()
            before = set(state.candidates)
            if stage.name in self.disabled:
                report = state.pass_through(stage.name)
                report.enabled = False
            else:
                report = stage.run(state)
            self._account(stage.name, before, state, report)
            report.seconds = round(time.perf_counter() - start, 3)
            reports.append(report)
            state.reports.append(report)
            if state.progress is not None:
                state.progress(
                    f"{stage.name}: " + ", ".join(f"{k} {v}" for k, v in report.counts.items())
                )
        return reports

    @staticmethod
    def _account(name: str, before: set[str], state: PipelineState, report: StageReport) -> None:
        """A stage that removes candidates without a Dropped record has them recorded here,
        so that nothing leaves the selection without a reason."""
        from selection.model import Dropped

        silent = _silently_dropped(before, state)
        for node_id in silent:
            state.dropped.append(
                Dropped(node_id, name, f"dropped by stage {name!r} without a reason")
            )
        if silent:
            report.notes.append(f"{len(silent)} candidates dropped without a reason (recorded)")
