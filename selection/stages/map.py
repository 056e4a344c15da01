"""Stage 2: map changes to the upstream instances they can affect (rules: selection.mapping)."""

from __future__ import annotations

import re

from selection.detect import Detector
from selection.mapping import Mapper
from selection.model import StageReport
from selection.oplists import OpDatabase
from selection.pyast import MODULE_SYMBOL, Symbol, module_symbols
from selection.refgraph import MACHINERY_FILES, ReferenceGraph
from selection.state import PipelineState
from selection.universe import Universe, build_universe
from selection.upstream import INTERNAL, NOT_DEVICE_GENERIC, database_files, load_database


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

    def _symbols_of(self, state: PipelineState, path: str) -> dict[str, Symbol] | None:
        detector = state.context.get("detector")
        if isinstance(detector, Detector):
            return detector.symbols("head", path)
        trees = state.request.head_trees
        tree = trees.module(path)
        return module_symbols(tree, trees.tree.read(path) or "") if tree is not None else None

    def _head_symbols(
        self, state: PipelineState, universe: Universe
    ) -> dict[str, dict[str, Symbol]]:
        """Symbols of the files the reference graph needs.

        Always: changed files, the databases, the machinery and the reused test files. Other
        infrastructure files are parsed only when their text names something on the way
        from a changed symbol (rounds until no file is added), instead of parsing them all.
        """
        trees = state.request.head_trees
        changes = state.changes.symbols if state.changes else []
        always = {c.path for c in changes if c.path.startswith((INTERNAL + "/", "test/"))}
        always |= set(database_files(trees)) | set(MACHINERY_FILES) | set(universe.modules)
        others = [
            p
            for p in trees.tree.list(INTERNAL)
            if p.endswith(".py")
            and p not in always
            and not p.removeprefix(INTERNAL + "/").startswith(NOT_DEVICE_GENERIC)
        ]
        symbols: dict[str, dict[str, Symbol]] = {}
        for path in always:
            found = self._symbols_of(state, path)
            if found is not None:
                symbols[path] = found
        frontier = {_link_name(c.qualname) for c in changes if not c.other_device_only} - {
            MODULE_SYMBOL
        }
        seen = set(frontier)
        while frontier and others:
            pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(frontier))) + r")\b")
            added = [p for p in others if pattern.search(trees.tree.read(p) or "")]
            others = [p for p in others if p not in added]
            for path in added:
                found = self._symbols_of(state, path)
                if found is not None:
                    symbols[path] = found
            users = {
                _link_name(q)
                for table in symbols.values()
                for q, sym in table.items()
                if q != MODULE_SYMBOL and sym.refs & frontier
            }
            frontier = users - seen
            seen |= frontier
        return symbols

    def run(self, state: PipelineState) -> StageReport:
        assert state.changes is not None, "map runs after detect"
        db = self.database(state)
        universe = self.universe(state)
        head_symbols = self._head_symbols(state, universe)
        graph = ReferenceGraph(head_symbols)
        mapper = Mapper(state.changes, universe, db, graph, head_symbols)
        mapper.aten_aliases = state.request.facts.ops_by_aten
        result = mapper.run()
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


def _link_name(qualname: str) -> str:
    """The name other code uses to reach a symbol (a dunder method: its class)."""
    name = qualname.rsplit(".", 1)[-1]
    if name.startswith("__") and name.endswith("__") and "." in qualname:
        return qualname.split(".", 1)[0]
    return name


def _candidate(inst: object):  # type: ignore[no-untyped-def]
    from selection.model import Candidate

    return Candidate(inst)  # type: ignore[arg-type]
