"""Stage 2: map changes to the upstream instances they can affect (rules: selection.mapping)."""

from __future__ import annotations

from selection.detect import Detector
from selection.mapping import Mapper
from selection.model import StageReport
from selection.oplists import OpDatabase
from selection.pyast import Symbol, module_symbols
from selection.refgraph import ReferenceGraph
from selection.state import PipelineState
from selection.universe import Universe, build_universe
from selection.upstream import INTERNAL, load_database

# Parts of the testing infrastructure that never reach device-generic op tests.
_GRAPH_EXCLUDE = ("distributed/", "generated/", "optests/", "codegen/", "test_module/")


class MapStage:
    name = "map"

    @staticmethod
    def database(state: PipelineState) -> OpDatabase:
        if "db" not in state.context:
            state.context["db"] = load_database(state.request.head_trees)
        return state.context["db"]  # type: ignore[return-value]

    @staticmethod
    def universe(state: PipelineState) -> Universe:
        if "universe" not in state.context:
            request = state.request
            universe = build_universe(
                request.head_trees, MapStage.database(state), request.backend, request.device
            )
            state.context["universe"] = universe
            state.blind_spots.extend(universe.blind_spots)
        return state.context["universe"]  # type: ignore[return-value]

    def _head_symbols(
        self, state: PipelineState, universe: Universe
    ) -> dict[str, dict[str, Symbol]]:
        trees = state.request.head_trees
        detector = state.context.get("detector")
        paths = [
            p
            for p in trees.tree.list(INTERNAL)
            if p.endswith(".py") and not p.removeprefix(INTERNAL + "/").startswith(_GRAPH_EXCLUDE)
        ]
        paths += list(universe.modules)
        symbols: dict[str, dict[str, Symbol]] = {}
        for path in paths:
            if isinstance(detector, Detector):
                found = detector.symbols("head", path)
            else:
                tree = trees.module(path)
                found = (
                    module_symbols(tree, trees.tree.read(path) or "") if tree is not None else None
                )
            if found is not None:
                symbols[path] = found
        for change in state.changes.symbols if state.changes else []:
            if change.path not in symbols and isinstance(detector, Detector):
                found = detector.symbols("head", change.path)
                if found is not None:
                    symbols[change.path] = found
        return symbols

    def run(self, state: PipelineState) -> StageReport:
        assert state.changes is not None, "map runs after detect"
        db = self.database(state)
        universe = self.universe(state)
        head_symbols = self._head_symbols(state, universe)
        graph = ReferenceGraph(head_symbols)
        result = Mapper(state.changes, universe, db, graph, head_symbols).run()
        state.mapped = result
        state.candidates = result.candidates
        if state.request.widen == "full" and result.canary_causes:
            for inst in universe.instances:
                candidate = state.candidates.setdefault(inst.node_id, _candidate(inst))
                candidate.causes.extend(result.canary_causes[:3])
        if result.unmapped_library:
            state.blind_spots.append(
                f"{len(result.unmapped_library)} changed library files are not mapped to ops statically "
                "(covered by the canary set)"
            )
        counts = {
            "upstream_instances": len(universe.instances),
            "templates": len(universe.templates),
            "database_entries": len(db.entries),
            "affected_instances": len(state.candidates),
            "canary_causes": len(result.canary_causes),
            "no_effect_changes": len(result.no_effect),
            "unmapped_library_files": len(result.unmapped_library),
        }
        return StageReport(self.name, counts)


def _candidate(inst: object):  # type: ignore[no-untyped-def]
    from selection.model import Candidate

    return Candidate(inst)  # type: ignore[arg-type]
