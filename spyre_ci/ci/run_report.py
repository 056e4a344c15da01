"""The `run_report` object the completed callback carries: steps, per-test results, log tail. Pure.

CRCR's body has only counts (`workflow.test_results`); a maintainer needs which tests
failed, with what message, and whether the run failed in its tests or around them.
`run_report` (docs/callbacks.md) carries:

- `steps`: every step of the run with its outcome and kind, so the relay can tell a
  test failure from an infrastructure one (checkout, install, selection, runner);
- `tests`: the per-outcome counts, the failed and errored tests (node id, a bounded
  message excerpt, the location, seconds, shard), and the ids of the tests that
  passed, xfailed or were skipped (per-test history on the relay);
- `legs`: one entry per test shard (matrix leg) with its own counts;
- `log_tail`: the last lines of the failing step's log.

Everything is bounded so that the callback stays far below the relay's 4 MiB body
limit and the HUD forward below DynamoDB's 400 KB item: at most `MAX_FAILURES`
detailed failures, messages cut at `MAX_MESSAGE_CHARS`, the id lists cut to
`MAX_LISTED_BYTES`; what was cut is counted in `truncated` and the JUnit artifact
(`junit_url`) keeps everything.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from spyre_ci.ci.junit import OUTCOMES, CaseResult, counts_of

SCHEMA_VERSION = "1"
MAX_FAILURES = 200
MAX_MESSAGE_CHARS = 2000
MAX_LISTED_BYTES = 1024 * 1024
MAX_LOG_LINES = 60
MAX_LOG_CHARS = 8 * 1024
STEP_KINDS = ("setup", "plan", "checkout", "select", "test", "artifacts", "report", "other")
STEP_OUTCOMES = ("success", "failure", "cancelled", "skipped", "timed_out")
LISTED = ("passed", "xfailed", "skipped")  # the outcomes sent as bare ids
_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+): (?P<what>\S.*)$")


@dataclass(frozen=True)
class Step:
    """One step of the run, as the relay classifies it (docs/callbacks.md, `run_report.steps`)."""

    job: str  # select, test (shard 1), report
    name: str  # what the workflow calls it: checkout, select, test, callback
    kind: str  # one of STEP_KINDS
    outcome: str  # one of STEP_OUTCOMES

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


# Keywords of step names (ours in upstream-dispatch.yml, GitHub's own) -> kind; first match wins.
_KIND_WORDS: tuple[tuple[str, str], ...] = (
    ("actions/checkout", "setup"),
    ("check out the upstream", "checkout"),
    ("checkout", "checkout"),
    ("set up", "setup"),
    ("setup", "setup"),
    ("install", "setup"),
    ("complete job", "setup"),
    ("post ", "setup"),
    ("upload", "artifacts"),
    ("publish", "artifacts"),
    ("wait", "report"),
    ("download", "artifacts"),
    ("fetch the selection", "artifacts"),
    ("claim", "plan"),  # claiming the dispatch for this run (spyre-ci ci claim) plans it
    ("plan", "plan"),
    ("select", "select"),
    ("run shard", "test"),
    ("test", "test"),
    ("call back", "report"),
    ("callback", "report"),
    ("report", "report"),
)


def step_kind(name: str) -> str:
    """The kind of a step from its name (`Check out the upstream test files` -> checkout)."""
    lowered = name.lower()
    return next((kind for word, kind in _KIND_WORDS if word in lowered), "other")


def step_outcome(value: str) -> str | None:
    """GitHub's step/job conclusion as a step outcome; None for "not run" (empty)."""
    value = value.strip().lower()
    if not value:
        return None
    if value in STEP_OUTCOMES:
        return value
    return "failure" if value in ("startup_failure", "action_required") else "skipped"


def parse_step(pair: str) -> Step:
    """`JOB/NAME=OUTCOME` (the report step's `--step`) -> Step; ValueError naming the problem."""
    where, sep, outcome = pair.partition("=")
    job, slash, name = where.partition("/")
    if not sep or not slash or not job or not name:
        raise ValueError(f"{pair!r} is not JOB/STEP=OUTCOME")
    parsed = step_outcome(outcome)
    if parsed is None:
        raise ValueError(f"{pair!r}: no outcome")
    return Step(job, name, step_kind(name), parsed)


def steps_from_json(data: Any, source: str) -> list[Step]:
    """Steps from a `--steps-file` (a JSON list of `{job, name, outcome[, kind]}`)."""
    if not isinstance(data, list):
        raise ValueError(f"{source}: expected a JSON list of steps")
    steps = []
    for index, item in enumerate(data):
        if not isinstance(item, Mapping) or not item.get("job") or not item.get("name"):
            raise ValueError(f"{source}: step {index} needs job and name")
        outcome = step_outcome(str(item.get("outcome") or ""))
        if outcome is None:
            continue  # not run
        kind = str(item.get("kind") or "") or step_kind(str(item["name"]))
        steps.append(Step(str(item["job"]), str(item["name"]), kind, outcome))
    return steps


def cut(text: str, limit: int, what: str = "characters") -> tuple[str, bool]:
    """`text` cut to `limit` characters with a marker that says how much is left out."""
    if len(text) <= limit:
        return text, False
    marker = f"\u2026 [{len(text) - limit} more {what} in the JUnit artifact]"
    return text[: max(0, limit - len(marker))] + marker, True


def excerpt(case: CaseResult) -> tuple[str, bool]:
    """The failure's message (pytest: the exception's message), else its `E` lines."""
    message = case.message.strip()
    if not message:
        lines = [ln[1:].strip() for ln in case.detail.splitlines() if ln.startswith("E ")]
        message = "\n".join(lines).strip() or case.detail.strip()
    return cut(message, MAX_MESSAGE_CHARS)


def location(case: CaseResult) -> str | None:
    """`test/test_x.py:21: AssertionError`: the last line of pytest's long report."""
    for line in reversed(case.detail.strip().splitlines()):
        if _LOCATION.match(line.strip()):
            return line.strip()[:300]
    return None


def _failure(case: CaseResult) -> tuple[dict[str, Any], bool]:
    message, was_cut = excerpt(case)
    entry: dict[str, Any] = {"id": case.node_id, "outcome": case.outcome, "message": message}
    where = location(case)
    if where:
        entry["location"] = where
    if case.duration is not None:
        entry["duration"] = round(case.duration, 3)
    if case.shard:
        entry["shard"] = case.shard
    return entry, was_cut


def _listed(cases: Sequence[CaseResult], budget: int) -> tuple[dict[str, list[str]], int]:
    """The ids of the non-failing tests by outcome, within `budget` bytes; and how many were left out."""
    lists: dict[str, list[str]] = {o: [] for o in LISTED}
    used, left_out = 0, 0
    for outcome in LISTED:
        for case in cases:
            if case.outcome != outcome:
                continue
            size = len(json.dumps(case.node_id)) + 1
            if used + size > budget:
                left_out += 1
                continue
            lists[outcome].append(case.node_id)
            used += size
    return {o: ids for o, ids in lists.items() if ids}, left_out


def build_tests(cases: Sequence[CaseResult], junit_url: str = "") -> dict[str, Any]:
    """`run_report.tests`: counts, bounded failures, the other tests' ids, what was cut."""
    ordered = sorted(cases, key=lambda c: (c.node_id, c.shard))
    failing = [c for c in ordered if c.failing]
    failures, cut_messages = [], 0
    for case in failing[:MAX_FAILURES]:
        entry, was_cut = _failure(case)
        failures.append(entry)
        cut_messages += was_cut
    budget = MAX_LISTED_BYTES - len(json.dumps(failures))
    results, left_out = _listed(ordered, max(0, budget))
    outcomes = Counter(c.outcome for c in cases)
    report: dict[str, Any] = {
        "outcomes": {o: outcomes.get(o, 0) for o in OUTCOMES},
        "failures": failures,
        "results": results,
        "truncated": {
            "failures": max(0, len(failing) - MAX_FAILURES),
            "results": left_out,
            "messages": cut_messages,
        },
    }
    if junit_url:
        report["junit_url"] = junit_url
    return report


def legs(cases: Sequence[CaseResult], steps: Sequence[Step]) -> list[dict[str, Any]]:
    """One entry per test shard: `{name, conclusion, tests}` (the grid's columns)."""
    by_shard: dict[str, list[CaseResult]] = {}
    for case in cases:
        by_shard.setdefault(case.shard or "1", []).append(case)
    jobs = {s.job for s in steps if s.kind == "test" or s.job.startswith("test")}
    for job in jobs:
        shard = _shard_of_job(job)
        if shard is not None:
            by_shard.setdefault(shard, [])
    out = []
    for shard in sorted(by_shard, key=_shard_order):
        job = f"test (shard {shard})"
        counts = counts_of(by_shard[shard])
        outcomes = {s.outcome for s in steps if s.job == job}
        out.append(
            {
                "name": job,
                "conclusion": _leg_conclusion(outcomes, counts.failed, bool(by_shard[shard])),
                "tests": counts.as_test_results(),
            }
        )
    return out


def _shard_of_job(job: str) -> str | None:
    match = re.fullmatch(r"test \(shard (?P<shard>[^)]+)\)", job)
    return match.group("shard") if match else None


def _shard_order(shard: str) -> tuple[int, str]:
    return (int(shard), "") if shard.isdigit() else (1 << 30, shard)


def _leg_conclusion(step_outcomes: set[str], failed: int, ran: bool) -> str:
    for outcome in ("cancelled", "timed_out"):
        if outcome in step_outcomes:
            return outcome
    if "failure" in step_outcomes or failed:
        return "failure"
    return "success" if ran or step_outcomes else "skipped"


def log_tail(text: str, step: str) -> dict[str, Any]:
    """The last `MAX_LOG_LINES` lines (at most `MAX_LOG_CHARS`) of a step's log."""
    lines = text.rstrip("\n").splitlines()
    tail = "\n".join(lines[-MAX_LOG_LINES:])
    truncated = len(lines) > MAX_LOG_LINES or len(tail) > MAX_LOG_CHARS
    return {"step": step, "text": tail[-MAX_LOG_CHARS:], "truncated": truncated}


def run_report(
    steps: Iterable[Step],
    cases: Sequence[CaseResult] | None,
    *,
    junit_url: str = "",
    tail: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole `run_report` object; `cases` None when no test ran (nothing selected, skipped)."""
    step_list = list(steps)
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "steps": [s.as_dict() for s in step_list],
    }
    if cases is not None:
        report["tests"] = build_tests(cases, junit_url)
        report["legs"] = legs(cases, step_list)
    if tail:
        report["log_tail"] = dict(tail)
    return report


def failed_ids(report: Mapping[str, Any]) -> list[str]:
    tests = report.get("tests") or {}
    return [str(f["id"]) for f in tests.get("failures") or []]
