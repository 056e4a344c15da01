"""Stage 3: keep what this backend reuses, per its manifests; resolve the canary set.

Per candidate the manifests decide (files, classes, templates, ops, dtypes, modes): a
candidate they skip or never generate is dropped with the manifest's reason; xfail stays
(the change may have fixed it). A template upstream restricts to another device
(`@onlyCUDA`) drops out too. Canary causes from map are resolved here, over the reused
instances, so every (class, template, dtype) stratum the backend runs gets one instance (and,
for machinery, every (op, dtype) pair).
"""

from __future__ import annotations

import hashlib

from selection.model import Candidate, Cause, Dropped, StageReport, TestInstance
from selection.oplists import OpDatabase
from selection.state import PipelineState
from selection.universe import Universe


def _upstream_skips(universe: Universe) -> dict[tuple[str, str, str], str]:
    return {
        (t.file, t.test_class, t.method): t.skipped_reason
        for t in universe.templates
        if t.skipped_reason
    }


def entry_skip(db: OpDatabase, inst: TestInstance, device: str) -> str | None:
    """The OpInfo's own unconditional `DecorateInfo(unittest.skip(...), cls, test)` for this
    instance on our device, if any: upstream never runs it, so it drops out."""
    if inst.op is None:
        return None
    name = inst.op[: -len(inst.op_variant) - 1] if inst.op_variant else inst.op
    entry = db.entries.get((inst.database, name, inst.op_variant))
    if entry is None:
        return None
    for decorations in entry.decorations.values():
        for deco in decorations:
            if deco.skips_for(device, inst.test_class, inst.template, inst.dtype):
                return deco.text
    return None


def reused_instances(state: PipelineState) -> list[TestInstance]:
    """What run-all would run: the upstream instances the manifests keep, minus templates
    upstream restricts to another device and instances an OpInfo skips unconditionally."""
    universe = state.instances()
    db = state.database()
    device = state.request.device.name
    backend = state.request.backend
    skipped_upstream = _upstream_skips(universe)
    reused: list[TestInstance] = []
    for inst in universe.instances:
        key = (inst.file, inst.test_class, inst.template)
        if key in skipped_upstream or not backend.runs(inst):
            continue
        if entry_skip(db, inst, device) is None:
            reused.append(inst)
    return reused


class ScopeStage:
    name = "scope"

    def run(self, state: PipelineState) -> StageReport:
        universe = state.instances()
        db = state.database()
        device = state.request.device.name
        backend = state.request.backend
        skipped_upstream = _upstream_skips(universe)
        reused = state.reused or reused_instances(state)
        state.reused_total = len(reused)
        state.reused = reused
        kept: dict[str, Candidate] = {}
        dropped_manifest = dropped_upstream = 0
        for node_id, candidate in state.candidates.items():
            inst = candidate.instance
            key = (inst.file, inst.test_class, inst.template)
            if key in skipped_upstream:
                state.dropped.append(
                    Dropped(
                        node_id,
                        self.name,
                        f"upstream {skipped_upstream[key]} skips it on this device",
                    )
                )
                dropped_upstream += 1
                continue
            answer = backend.answer(inst)
            if not answer.runs:
                state.dropped.append(Dropped(node_id, self.name, f"manifest: {answer.reason}"))
                dropped_manifest += 1
                continue
            skip = entry_skip(db, inst, device)
            if skip is not None:
                state.dropped.append(Dropped(node_id, self.name, f"upstream skips it: {skip}"))
                dropped_upstream += 1
                continue
            candidate.mode = answer.mode
            candidate.causes.append(
                Cause("scope", "manifest", f"reused as {answer.mode} ({answer.reason})")
            )
            kept[node_id] = candidate
        added = self._canary(state, reused, kept)
        state.candidates = kept
        counts = {
            "reused_instances": len(reused),
            "candidates_in": len(kept) - added + dropped_manifest + dropped_upstream,
            "dropped_by_manifest": dropped_manifest,
            "dropped_upstream_skip": dropped_upstream,
            "canary_added": added,
            "kept": len(kept),
        }
        return StageReport(self.name, counts)

    def _canary(
        self, state: PipelineState, reused: list[TestInstance], kept: dict[str, Candidate]
    ) -> int:
        """One instance per stratum (`_strata`) of the reused instances each canary aims at
        (all of them for an unaimed one), unless one already runs."""
        canaries = state.mapped.canaries if state.mapped else []
        if not canaries or state.request.widen == "full":
            return 0
        added = 0
        for canary in canaries:
            pool = [i for i in reused if canary.aim is None or i.node_id in canary.aim]
            added += self._stratified(state, canary.cause, pool, kept, canary.per_op)
        return added

    def _stratified(
        self,
        state: PipelineState,
        cause: Cause,
        pool: list[TestInstance],
        kept: dict[str, Candidate],
        per_op: bool,
    ) -> int:
        backend = state.request.backend
        root = Cause("detect", "machinery", cause.summary)
        added = 0
        for stratum, members, name in _strata(pool, per_op):
            covering = next((kept[m.node_id] for m in members if m.node_id in kept), None)
            if covering is not None:
                _covers(covering, root, cause)
                continue
            chosen = min(members, key=lambda m: _spread(m, stratum))
            candidate = Candidate(chosen, [root, cause])
            candidate.causes.append(Cause("map", "canary", f"canary for {name}: {cause.summary}"))
            answer = backend.answer(chosen)
            candidate.mode = answer.mode
            candidate.causes.append(
                Cause("scope", "manifest", f"reused as {answer.mode} ({answer.reason})")
            )
            kept[chosen.node_id] = candidate
            added += 1
        return added


def _covers(candidate: Candidate, root: Cause, cause: Cause) -> None:
    """A kept test stands for a canary's stratum: say so in its causes (once), so triage,
    which drops a test only when every change naming it allows that, never drops it and
    leaves the stratum without a test."""
    if not any(c.stage == "detect" and c.kind == root.kind for c in candidate.causes):
        candidate.causes.extend((root, Cause("map", "canary", f"stands for {cause.summary}")))


Stratum = tuple[str, ...]


def _strata(
    pool: list[TestInstance], per_op: bool
) -> list[tuple[Stratum, list[TestInstance], str]]:
    """The canary's strata, each with its members and its name: every (file, class,
    template, dtype) of the pool, so each template runs once per dtype, then (`per_op`, for
    machinery) every (op, dtype) pair, so each op runs once per dtype too."""
    templates: dict[Stratum, list[TestInstance]] = {}
    pairs: dict[Stratum, list[TestInstance]] = {}
    for inst in pool:
        dtype = inst.dtype or ""
        templates.setdefault((inst.file, inst.test_class, inst.template, dtype), []).append(inst)
        if per_op and inst.op is not None and inst.dtype is not None:
            pairs.setdefault((inst.database, inst.op, inst.dtype), []).append(inst)
    found = [
        (s, members, f"{s[1]}.{s[2]} [{s[3] or 'no dtype'}]")
        for s, members in sorted(templates.items())
    ]
    return found + [(s, members, f"{s[1]} [{s[2]}]") for s, members in sorted(pairs.items())]


def _spread(inst: TestInstance, stratum: tuple[str, ...]) -> str:
    """A stable choice that differs between strata, so canaries cover many ops."""
    return hashlib.sha1(f"{inst.node_id}|{'|'.join(stratum)}".encode()).hexdigest()
