"""What kind of failure a completed run is, from the outcomes of its steps (pure).

A run's CRCR conclusion says *that* it failed; a backend team needs to know *where*:

| kind | when |
| --- | --- |
| `test` | tests failed (a regression candidate) |
| `infrastructure` | a step around the tests failed (setup, plan, checkout, selection, artifacts, report), the test runner failed without a failing test, or no test ran |
| `timeout` | the run or one of its steps timed out (also the relay's sweeper) |
| `cancelled` | the run was cancelled |
| `unclassified` | it failed and reported no steps to tell (a CRCR-only downstream): counted as before |

Success, skipped and neutral runs have no failure kind (None). Infrastructure failures
are left out of pass rates and L3 readiness; they say nothing about the backend's code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TEST = "test"
INFRASTRUCTURE = "infrastructure"
TIMEOUT = "timeout"
CANCELLED = "cancelled"
UNCLASSIFIED = "unclassified"
KINDS = (TEST, INFRASTRUCTURE, TIMEOUT, CANCELLED, UNCLASSIFIED)
FAILED_CONCLUSIONS = frozenset({"failure", "startup_failure", "action_required"})


@dataclass(frozen=True)
class StepOutcome:
    job: str
    name: str
    kind: str  # setup, plan, checkout, select, test, artifacts, report, other
    outcome: str  # success, failure, cancelled, skipped, timed_out

    @property
    def label(self) -> str:
        return f"{self.job} / {self.name}"


@dataclass(frozen=True)
class Classification:
    kind: str | None  # one of KINDS, None when the run did not fail
    step: str | None = None  # the step that decided it, or why ("no test ran")


def classify(
    conclusion: str | None,
    steps: Sequence[StepOutcome] = (),
    tests_failed: int = 0,
    tests_total: int | None = None,
) -> Classification:
    """The failure kind of a completed run with this conclusion, steps and test counts."""
    timed_out = next((s for s in steps if s.outcome == "timed_out"), None)
    if conclusion == "timed_out" or (timed_out and conclusion in FAILED_CONCLUSIONS):
        return Classification(TIMEOUT, timed_out.label if timed_out else None)
    if conclusion == "cancelled":
        return Classification(CANCELLED)
    if conclusion not in FAILED_CONCLUSIONS:
        return Classification(None)
    if tests_failed > 0:
        return Classification(TEST)
    if not steps:
        return Classification(UNCLASSIFIED)  # nothing to tell: treated as CRCR always did
    failed = [s for s in steps if s.outcome == "failure"]
    around = next((s for s in failed if s.kind != "test"), None)
    if around is not None:
        return Classification(INFRASTRUCTURE, around.label)
    if failed:  # the test step failed, yet no test did: the runner itself
        return Classification(INFRASTRUCTURE, f"{failed[0].label} (runner, no failing test)")
    if not tests_total:
        return Classification(INFRASTRUCTURE, "no test ran")
    return Classification(UNCLASSIFIED)


def swept_kind(conclusion: str | None) -> Classification:
    """What the relay's own verdict is: the sweeper's timed_out, or a run that ended
    without reporting (the local target's process died): its runner failed."""
    if conclusion == "timed_out":
        return Classification(TIMEOUT, "no completion reported in time")
    return Classification(INFRASTRUCTURE, "runner: the run ended without reporting")
