"""selection.json: the versioned, machine-readable result of a selection run.

Schema `spyre-ci/selection`, version 1 (docs/selection.md describes every field). Ids are
pytest node ids relative to the PyTorch root, as `spyre-ci test --selection DIR` reads them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from selection.model import Cause, Revision
from selection.state import PipelineState
from spyre_ci import __version__

SCHEMA = "spyre-ci/selection"
SCHEMA_VERSION = 1
MAX_NO_EFFECT = 500


def run_as(node_id: str) -> str:
    """What pytest is given for a selected id: the id itself, or for a template that could
    not be enumerated (`...::test_foo*`) its whole instantiated class (a superset, never less)."""
    return node_id.rsplit("::", 1)[0] if node_id.endswith("*") else node_id


class EvidenceTable:
    """Evidence chains written once (`evidence: {id: [hop, ...]}`) and named by each cause
    (`evidence_id`): thousands of tests reached by one change share its chain."""

    def __init__(self) -> None:
        self.chains: dict[str, list[str]] = {}
        self._ids: dict[tuple[str, ...], str] = {}

    def cause(self, cause: Cause) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": cause.stage, "kind": cause.kind, "summary": cause.summary}
        if cause.basis:
            out["basis"] = cause.basis
        if cause.evidence:
            key = self._ids.get(cause.evidence)
            if key is None:
                key = self._ids[cause.evidence] = f"e{len(self._ids)}"
                self.chains[key] = list(cause.evidence)
            out["evidence_id"] = key
        return out


def _revision(rev: Revision) -> dict[str, str]:
    return {
        "label": rev.label,
        "sha": rev.sha,
        "version": rev.version,
        "upstream_sha": rev.upstream_sha,
    }


def build_document(
    state: PipelineState, shards: dict[str, int], agent: dict[str, Any], matrix: dict[str, object]
) -> dict[str, Any]:
    request = state.request
    universe = state.universe
    exact_ids = universe.exact_ids if universe is not None else set()
    evidence = EvidenceTable()
    selected = []
    for node_id, candidate in state.candidates.items():
        inst = candidate.instance
        selected.append(
            {
                "id": node_id,
                "run_as": run_as(node_id),
                "shard": shards.get(node_id),
                "rank": candidate.rank,
                "mode": candidate.mode,
                "exact": node_id in exact_ids,
                "group": candidate.group,
                "file": inst.file,
                "class": inst.test_class,
                "template": inst.template,
                "op": inst.op,
                "dtype": inst.dtype,
                "causes": [evidence.cause(c) for c in candidate.causes],
            }
        )
    reused = state.reused_total
    mapped = state.mapped
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "generated_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mode": request.mode,
        "base": _revision(request.base),
        "head": _revision(request.head),
        "device": {"name": request.device.name, "class_suffix": request.device.class_suffix},
        "manifests": request.backend.sources,
        "widen": request.widen,
        "agent": agent,
        "stages": [
            {
                "name": r.name,
                "enabled": r.enabled,
                "seconds": r.seconds,
                "counts": r.counts,
                "notes": r.notes,
            }
            for r in state.reports
        ],
        "summary": {
            "changed_files": len(request.changed_paths),
            "reused_instances": reused,
            "selected": len(selected),
            "ratio": round(len(selected) / reused, 4) if reused else None,
            "dropped": len(state.dropped),
            "exact_ids": sum(1 for s in selected if s["exact"]),
            "shards": max(shards.values(), default=0),
        },
        "blind_spots": state.blind_spots,
        "notes": state.notes,
        "manifest_changes": state.manifest_findings,
        "no_effect": (mapped.no_effect[:MAX_NO_EFFECT] if mapped else []),
        "no_effect_total": len(mapped.no_effect) if mapped else 0,
        "groups": [
            {
                "id": g.group_id,
                "cause": g.cause.summary,
                "kind": g.cause.kind,
                "size": len(g.node_ids),
                "templates": sorted(g.templates),
                "ops": sorted(g.ops)[:50],
                "dtypes": sorted(g.dtypes),
                "decision": g.verdict.decision if g.verdict else "run",
                "rationale": g.verdict.rationale if g.verdict else "",
                "confidence": g.verdict.confidence if g.verdict else 0.0,
                "agent": g.verdict.agent if g.verdict else "",
                "fallback_reason": g.verdict.fallback_reason if g.verdict else "",
            }
            for g in state.groups
        ],
        "matrix": matrix,
        "selected": selected,
        "evidence": evidence.chains,
        "dropped": [{"id": d.node_id, "stage": d.stage, "reason": d.reason} for d in state.dropped],
    }
