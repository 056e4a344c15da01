"""Stage 2: map changes to the upstream instances they can affect (selection.mapping composes
the link kinds of selection.links)."""

from __future__ import annotations

from selection.links.cpp import clone_calls_note, release_cpp_blind_spot
from selection.links.recorded_uses import recorded_bodies_note
from selection.links.startup import load_time_functions, startup_modules
from selection.mapping import Mapper
from selection.model import Candidate, StageReport
from selection.stages.scope import reused_instances
from selection.state import PipelineState


class MapStage:
    name = "map"

    def run(self, state: PipelineState) -> StageReport:
        assert state.changes is not None, "map runs after detect"
        index = state.link_index()
        universe = index.universe
        state.reused = reused_instances(state)
        reused = frozenset(i.node_id for i in state.reused)
        device = state.request.device.name
        result = Mapper(state.changes, index, reused=reused, device=device).run()
        state.mapped = result
        state.candidates = result.candidates
        state.blind_spots.extend(result.blind_spots)
        if state.request.mode == "release":
            cpp = release_cpp_blind_spot(index)
            if cpp is not None:
                state.blind_spots.append(cpp.text)
        if state.request.mode != "release" and not state.request.native_calls_note:
            state.notes.append(clone_calls_note(index))  # a clone's C++, read with the graph
        recorded = recorded_bodies_note(universe.templates, index.explorer.resolver)
        if recorded is not None:
            state.notes.append(recorded)
        for path, error in sorted(index.explorer.unparseable.items()):
            state.blind_spots.append(f"{path} could not be parsed for links: {error}")
        if state.request.widen == "full" and result.canaries:
            self._widen(state, result)
        observed = index.observed
        counts = {
            "upstream_instances": len(universe.instances),
            "templates": len(universe.templates),
            "database_entries": len(index.db.entries),
            "link_graph_nodes": len(set(index.graph.users) | set(index.graph.uses)),
            "changes": result.decided,
            "affected_instances": len(state.candidates),
            "observed_instances": result.observed_instances,
            "canary_causes": len(result.canaries),
            "no_effect_changes": len(result.no_effect),
            "blind_spots": len(result.blind_spots),
        }
        if state.changes.symbols:  # what `import torch` runs (selection.links.startup)
            counts["startup_modules"] = len(startup_modules(index))
            counts["load_time_functions"] = len(load_time_functions(index))
        notes = []
        in_scope = {
            (i.database, i.op, i.dtype) for i in state.reused if i.op is not None and i.dtype
        }
        unrecorded = len(in_scope - observed.recorded) if observed is not None else len(in_scope)
        counts["pairs_in_scope"] = len(in_scope)
        counts["pairs_without_recording"] = unrecorded
        if observed is not None:
            notes.append(
                f"recorded dependencies: {observed.describe()} "
                f"({len(observed.recorded)} (op, dtype) pairs); {unrecorded} of the "
                f"{len(in_scope)} in-scope pairs have no recording (static links for those)"
            )
        else:
            notes.append(
                f"no recorded dependencies: static links for all {len(in_scope)} in-scope "
                "(op, dtype) pairs (`spyre-ci deps record`)"
            )
        if unrecorded and observed is not None:  # without a map, the request's note says so
            state.notes.append(notes[-1])
        return StageReport(self.name, counts, notes)

    @staticmethod
    def _widen(state: PipelineState, result: object) -> None:
        """--widen full: every instance a canary would sample runs instead."""
        universe = state.instances()
        for canary in state.mapped.canaries if state.mapped else []:
            for inst in universe.instances:
                if canary.aim is None or inst.node_id in canary.aim:
                    candidate = state.candidates.setdefault(inst.node_id, Candidate(inst))
                    if len(candidate.causes) < 6:
                        candidate.causes.append(canary.cause)
