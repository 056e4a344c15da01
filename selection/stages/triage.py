"""Stage 4: triage. Candidates are grouped by root cause; an agent decides per group.

Whatever the agent drops ("not_needed") is recorded in `dropped` with its rationale;
"manifest_change" groups still run and are listed for the backend team. What runs is
ranked: agent priority, then manifest mode (mandatory before xfail), then the device's
primary dtype first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Set

from selection.agents import TriageAgent
from selection.agents.deterministic import DeterministicAgent
from selection.mapping import MAX_CAUSES
from selection.model import Candidate, Cause, Dropped, StageReport
from selection.python.failure_paths import FAILURE_PATH
from selection.state import Group, PipelineState, Verdict

MODE_WEIGHT = {"mandatory_success": 1.0, "xfail_strict": 0.9, "xfail": 0.75}
PRIMARY_DTYPES = ("float16", "bfloat16", "float32")


def root_cause(candidate: Candidate) -> tuple[Cause, Cause]:
    detect = next((c for c in candidate.causes if c.stage == "detect"), None)
    how = next((c for c in candidate.causes if c.stage == "map"), None)
    how = how or Cause("map", "unknown", "reached")
    return detect or how, how


GRADIENT_FREE = " (templates that compute no gradients)"
ERROR_FREE = " (templates that handle no errors)"
Templates = Set[tuple[str, str, str]]  # (file, class, method)


def build_groups(
    candidates: dict[str, Candidate],
    gradient_free: Templates = frozenset(),
    error_free: Templates = frozenset(),
) -> list[Group]:
    """Group by root cause. A derivative change's instances are split by whether their
    template computes gradients (`gradient_free` holds those that do not), since only the
    others can reach the changed formula; a change confined to failing paths, by whether
    their template handles errors (`error_free` holds those that do not), since only the
    others can tell what a failure raises or says."""
    groups: dict[str, Group] = {}
    reaches: dict[str, dict[str, int]] = {}  # group -> map link summaries -> instances
    for node_id, candidate in candidates.items():
        detect, how = root_cause(candidate)
        inst = candidate.instance
        template = (inst.file, inst.test_class, inst.template)
        free = template in gradient_free and _every(candidate, "map", "derivative")
        no_errors = template in error_free and _every(candidate, "detect", FAILURE_PATH)
        key = f"{how.kind}|{detect.summary}" + ("|gradient-free" if free else "")
        key += "|error-free" if no_errors else ""
        group_id = "g" + hashlib.sha1(key.encode()).hexdigest()[:10]
        group = groups.get(group_id)
        if group is None:
            same = detect is how or detect.summary == how.summary  # a canary's one cause
            summary = detect.summary if same else f"{detect.summary} -> {how.summary}"
            summary += (GRADIENT_FREE if free else "") + (ERROR_FREE if no_errors else "")
            group = groups[group_id] = Group(group_id, Cause("triage", how.kind, summary))
            group.gradient_free, group.error_free = free, no_errors
        group.node_ids.append(node_id)
        links = reaches.setdefault(group_id, {})
        links[how.summary] = links.get(how.summary, 0) + 1
        group.templates.add(f"{inst.test_class}.{inst.template}")
        if inst.op:
            group.ops.add(inst.op)
        if inst.dtype:
            group.dtypes.add(inst.dtype)
        group.modes.add(candidate.mode)
        candidate.group = group_id
    for group_id, group in groups.items():
        _name_the_links(group, reaches[group_id])
    return sorted(groups.values(), key=lambda g: (-len(g.node_ids), g.group_id))


def _every(candidate: Candidate, stage: str, kind: str) -> bool:
    """Whether every change reaching the candidate is of that kind at that stage (a test
    another change reaches too runs for that one). A candidate that names MAX_CAUSES
    changes may be reached by more, unnamed: not known, so no."""
    causes = [c for c in candidate.causes if c.stage == stage]
    return 0 < len(causes) < MAX_CAUSES and all(c.kind == kind for c in causes)


def _name_the_links(group: Group, links: dict[str, int]) -> None:
    """A group spans every test one change reaches; when they are reached through several
    links (an entry or template, and the chain to it), say so rather than show the first
    one as if it reached them all: "f modified -> 434 ways in: template T.t (5 links: ...)
    (1571 tests); ...", the chain's own length in its parentheses."""
    if len(links) <= 1 or " -> " not in group.cause.summary:
        return
    detect = group.cause.summary.split(" -> ", 1)[0]
    common = sorted(links.items(), key=lambda kv: (-kv[1], kv[0]))
    examples = "; ".join(f"{name} ({count} tests)" for name, count in common[:3])
    more = f"; {len(common) - 3} more" if len(common) > 3 else ""
    summary = f"{detect} -> {len(common)} ways in: {examples}{more}"
    group.cause = Cause(group.cause.stage, group.cause.kind, summary)


def _rank(
    candidate: Candidate, verdict: Verdict, primary: tuple[str, ...] = PRIMARY_DTYPES
) -> float:
    """Agent priority x manifest mode, plus a little for the device's primary dtypes."""
    dtype = candidate.instance.dtype or ""
    bonus = 0.05 * (len(primary) - primary.index(dtype)) / len(primary) if dtype in primary else 0.0
    return round(verdict.priority * MODE_WEIGHT.get(candidate.mode, 1.0) + bonus, 4)


def manifest_findings(state: PipelineState) -> list[str]:
    """Upstream removals the manifests still name: these need a manifest change."""
    mapped, backend = state.mapped, state.request.backend
    if mapped is None:
        return []
    findings: list[str] = []
    supported = backend.supported_ops() or set()
    for entry in mapped.removed_entries:
        if entry.name in supported or entry.full_name in supported:
            findings.append(
                f"OpInfo {entry.full_name!r} was removed upstream but the manifests list it in supported_ops"
            )
    named = {(t.file, t.test_class, t.method) for t in backend.named_templates()[0]}
    for change in mapped.removed_templates:
        cls_name, _, method = change.qualname.partition(".")
        if (change.path, cls_name, method) in named:
            findings.append(
                f"{change.path}: {change.qualname} was removed upstream but a manifest names it"
            )
    return findings


def _manifest_change_groups(groups: list[Group]) -> list[str]:
    """The agent's manifest_change verdicts, worded for the report's list."""
    return [
        f"{g.cause.summary}: {g.verdict.rationale} ({len(g.node_ids)} tests, still run)"
        for g in groups
        if g.verdict is not None and g.verdict.decision == "manifest_change"
    ]


def templates_without(state: PipelineState, trait: str) -> set[tuple[str, str, str]]:
    """The run's templates lacking `trait` (Universe.templates_without)."""
    universe = state.universe
    return universe.templates_without(trait) if universe is not None else set()


class TriageStage:
    name = "triage"

    def __init__(self, agent: TriageAgent | None = None) -> None:
        self.agent: TriageAgent = agent or DeterministicAgent()

    def run(self, state: PipelineState) -> StageReport:
        groups = build_groups(
            state.candidates,
            templates_without(state, "computes_gradients"),
            templates_without(state, "handles_errors"),
        )
        verdicts = self.agent.decide(groups) if groups else {}
        kept: dict[str, Candidate] = {}
        counts = {
            "groups": len(groups),
            "run": 0,
            "not_needed": 0,
            "manifest_change": 0,
            "fallbacks": 0,
        }
        for group in groups:
            verdict = verdicts.get(group.group_id) or Verdict(
                "run",
                "fallback to run: the agent returned no verdict",
                0.0,
                0.5,
                self.agent.name,
                fallback_reason="no verdict",
            )
            group.verdict = verdict
            counts["fallbacks"] += bool(verdict.fallback_reason)
            counts[verdict.decision] = counts.get(verdict.decision, 0) + len(group.node_ids)
            for node_id in group.node_ids:
                candidate = state.candidates[node_id]
                candidate.causes.append(
                    Cause(
                        "triage",
                        verdict.decision,
                        f"{verdict.agent}: {verdict.rationale} (confidence {verdict.confidence:.2f})",
                    )
                )
                if verdict.decision == "not_needed":
                    state.dropped.append(
                        Dropped(node_id, self.name, f"{verdict.agent}: {verdict.rationale}")
                    )
                    continue
                candidate.rank = _rank(candidate, verdict, state.request.facts.primary_dtypes)
                kept[node_id] = candidate
        state.groups = groups
        findings = manifest_findings(state) + _manifest_change_groups(groups)
        state.manifest_findings = findings
        counts["manifest_findings"] = len(findings)
        state.candidates = dict(sorted(kept.items(), key=lambda kv: (-kv[1].rank, kv[0])))
        notes = list(getattr(self.agent, "notes", []))
        tokens = getattr(self.agent, "tokens_used", None)
        if tokens is not None:
            counts["llm_tokens"] = int(tokens)
            counts["llm_requests"] = int(getattr(self.agent, "requests_sent", 0))
            counts["llm_cache_hits"] = int(getattr(self.agent, "cache_hits", 0))
        counts["selected"] = len(state.candidates)
        return StageReport(self.name, counts, notes)
