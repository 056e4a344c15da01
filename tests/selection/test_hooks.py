"""Third-party stages on the hook contract: registered, run in place, counted, accountable."""

from __future__ import annotations

from pathlib import Path

from selection.model import Dropped, StageReport
from selection.pipeline import SelectOptions, prepare, run_pipeline
from selection.state import PipelineState
from tests.support.upstream_repo import INTERNAL, UpstreamRepo


class KeepFloat16:
    """A plugin that keeps float16 instances only, recording why it drops the others."""

    name = "float16-only"

    def run(self, state: PipelineState) -> StageReport:
        dropped = [i for i, c in state.candidates.items() if c.instance.dtype != "float16"]
        for node_id in dropped:
            del state.candidates[node_id]
            state.dropped.append(Dropped(node_id, self.name, "this CI lane runs float16 only"))
        return StageReport(self.name, {"dropped": len(dropped), "kept": len(state.candidates)})


class Careless:
    name = "careless"

    def run(self, state: PipelineState) -> StageReport:
        state.candidates.clear()  # no Dropped records: the pipeline must record them
        return StageReport(self.name, {})


def _run(upstream: UpstreamRepo, manifest: Path, plugin: object, after: str) -> PipelineState:
    head = upstream.change(
        f"{INTERNAL}/common_methods_invocations.py",
        "torch.ones(4, device=device",
        "torch.ones(6, device=device",
    )
    request, _ = prepare(
        SelectOptions(
            from_=upstream.base, to=head, pytorch_repo=upstream.path, manifests=[manifest]
        )
    )
    return run_pipeline(request, plugins=[(plugin, after)])  # type: ignore[list-item]


def test_a_plugin_stage_runs_after_the_stage_it_names_and_reports_counts(
    upstream: UpstreamRepo, manifest: Path
) -> None:
    state = _run(upstream, manifest, KeepFloat16(), "scope")
    assert [r.name for r in state.reports] == ["detect", "map", "scope", "float16-only", "triage"]
    assert next(r for r in state.reports if r.name == "float16-only").counts == {
        "dropped": 1,
        "kept": 1,
    }
    assert [c.instance.name for c in state.candidates.values()] == ["test_out_mul_spyre_float16"]
    assert any(d.reason == "this CI lane runs float16 only" for d in state.dropped)


def test_candidates_a_stage_drops_without_a_reason_are_recorded(
    upstream: UpstreamRepo, manifest: Path
) -> None:
    state = _run(upstream, manifest, Careless(), "scope")
    assert state.candidates == {}
    silent = [d for d in state.dropped if d.stage == "careless"]
    assert len(silent) == 2
    assert all(d.reason == "dropped by stage 'careless' without a reason" for d in silent)
    assert (
        "2 candidates dropped without a reason (recorded)"
        in next(r for r in state.reports if r.name == "careless").notes
    )
