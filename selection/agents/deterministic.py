"""The default triage agent: rules, no network, the same answer every time."""

from __future__ import annotations

from selection.state import Group, Verdict

# What a run verdict says for a change the tests run, by the kind of its map cause.
_RAN_CHANGED = {
    "entry": "the op's OpInfo/ModuleInfo entry changed",
    "native": "the op's schema, kernel or derivative formula changed",
    "library": "library code these tests run changed (the cause chain shows the path)",
    "helper": "a helper these tests run changed (the cause chain shows the path)",
    "widen": "what changed could not be analysed or linked test by test, so what it may "
    "reach runs (the cause says why)",
    "unparseable": "a changed file could not be parsed, so what depends on it runs",
}

# How likely a change of each kind is to break a reused test (higher runs first).
PRIORITY = {
    "template": 0.95,
    "entry": 0.85,
    "entry-decoration": 0.7,
    "entry-dtypes": 0.85,
    "native": 0.75,
    "derivative": 0.75,
    "helper": 0.65,
    "library": 0.6,
    "unparseable": 0.9,
    "widen": 0.9,
    "canary": 0.3,
    "disabled": 0.2,
}


def _how(group: Group) -> str:
    return group.cause.kind


class DeterministicAgent:
    name = "deterministic"

    def decide(self, groups: list[Group]) -> dict[str, Verdict]:
        return {g.group_id: self._verdict(g) for g in groups}

    def _verdict(self, group: Group) -> Verdict:
        kind = _how(group)
        priority = PRIORITY.get(kind, 0.5)
        if kind == "canary":
            return Verdict(
                "run",
                "canary: what the change reaches cannot be told test by test (shared "
                "machinery, module-level code, a blind spot, what the recording does not "
                "cover): one instance per class, template and dtype it could reach (for "
                "machinery, per op and dtype too)",
                0.6,
                priority,
                self.name,
            )
        if (
            group.modes == {"xfail"}
            and "- DecorateInfo(unittest.expectedFailure" in group.cause.summary
        ):
            # Still runs (the stage keeps manifest_change groups): if it passes now, the
            # manifest's xfail is stale and strict xfail would fail the job.
            return Verdict(
                "manifest_change",
                "upstream removed an expected failure: the manifest's xfail may be stale; "
                "if these pass, make them mandatory_success",
                0.8,
                0.9,
                self.name,
            )
        if kind == "entry-dtypes":
            return Verdict("run", "the op now generates these dtypes", 0.8, priority, self.name)
        if kind == "entry-decoration":
            return Verdict(
                "run",
                "a skip/decorator aimed at these tests changed",
                0.7,
                priority,
                self.name,
            )
        if group.error_free:
            return Verdict(
                "not_needed",
                "the change is confined to what runs when something fails (what is raised, "
                "a failed check's message), and these templates handle no errors (no "
                "assertRaises, try or error inputs in their bodies or the helpers they "
                "call): a test that passes never runs it, one that fails still fails",
                0.75,
                priority,
                self.name,
            )
        if kind == "derivative" and group.gradient_free:
            return Verdict(
                "not_needed",
                "a derivative formula only runs when gradients are computed, and these "
                "templates compute none (no grad/backward in their bodies or the helpers "
                "they call)",
                0.75,
                priority,
                self.name,
            )
        if kind == "derivative":
            return Verdict(
                "run",
                "reached through a derivative formula (the op's own changed, or one "
                "that calls the changed op): it runs where these templates compute gradients",
                0.8,
                priority,
                self.name,
            )
        if kind in _RAN_CHANGED:
            return Verdict("run", _RAN_CHANGED[kind], 0.8, priority, self.name)
        if kind == "template":
            return Verdict("run", "the test body itself changed", 0.9, priority, self.name)
        return Verdict("run", f"reached through a `{kind}` link", 0.6, priority, self.name)
