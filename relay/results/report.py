"""`run_report` and `progress`: spyre-ci's additions to CRCR's callback body, validated.

A CRCR callback action sends neither; spyre-ci's `ci report` sends `run_report` with
the completed callback (docs/callbacks.md):

    {"schema_version": "1",
     "steps": [{"job": "select", "name": "checkout", "kind": "checkout", "outcome": "failure"}],
     "tests": {"outcomes": {"passed": 1890, "failed": 3, ...},
               "failures": [{"id": "test/test_x.py::TestXSPYRE::test_y", "outcome": "failed",
                             "message": "AssertionError: ...", "location": "...", "duration": 0.2,
                             "shard": "1"}],
               "results": {"passed": [ids], "xfailed": [ids], "skipped": [ids]},
               "truncated": {"failures": 0, "results": 0, "messages": 0},
               "junit_url": "https://github.com/<repo>/actions/runs/<id>#artifacts"},
     "legs": [{"name": "test (shard 1)", "conclusion": "failure", "tests": {...}}],
     "log_tail": {"step": "test (shard 1) / test", "text": "...", "truncated": true}}

and `progress` (`{done, total, step}`) with a repeated in_progress. Unknown keys are
kept (a newer downstream does not break us); sizes are bounded (400 names the field).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

STEP_OUTCOMES = ("success", "failure", "cancelled", "skipped", "timed_out")
StepOutcome = Literal["success", "failure", "cancelled", "skipped", "timed_out"]
MAX_LISTED_IDS = 100_000
MAX_ID = 1000


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class StepReport(_Open):
    job: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    kind: str = Field(default="other", max_length=40)
    outcome: StepOutcome


class FailureReport(_Open):
    id: str = Field(min_length=1, max_length=MAX_ID)
    outcome: Literal["failed", "error"] = "failed"
    message: str = Field(default="", max_length=10_000)
    location: str | None = Field(default=None, max_length=500)
    duration: float | None = Field(default=None, ge=0)
    shard: str | None = Field(default=None, max_length=50)


class TestsReport(_Open):
    __test__ = False  # not a pytest test class

    outcomes: dict[str, int] = Field(default_factory=dict)
    failures: list[FailureReport] = Field(default_factory=list, max_length=1000)
    results: dict[str, list[str]] = Field(default_factory=dict)
    truncated: dict[str, int] = Field(default_factory=dict)
    junit_url: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _bounded(self) -> TestsReport:
        if any(n < 0 for n in self.outcomes.values()):
            raise ValueError("outcomes: counts must be >= 0")
        listed = sum(len(ids) for ids in self.results.values())
        if listed > MAX_LISTED_IDS:
            raise ValueError(f"results: {listed} ids listed (at most {MAX_LISTED_IDS})")
        if any(len(i) > MAX_ID or not i for ids in self.results.values() for i in ids):
            raise ValueError(f"results: ids must be 1..{MAX_ID} characters")
        return self


class LegReport(_Open):
    name: str = Field(min_length=1, max_length=200)
    conclusion: str = Field(default="success", max_length=40)
    tests: dict[str, int] | None = None


class LogTail(_Open):
    step: str = Field(default="", max_length=300)
    text: str = Field(default="", max_length=64 * 1024)
    truncated: bool = False


class RunReport(_Open):
    schema_version: Literal["1"] = "1"
    steps: list[StepReport] = Field(default_factory=list, max_length=500)
    tests: TestsReport | None = None
    legs: list[LegReport] = Field(default_factory=list, max_length=256)
    log_tail: LogTail | None = None

    def compact(self, failures: int = 50, message: int = 500) -> dict[str, Any]:
        """A bounded copy for the stored payload and the HUD (no id lists, short messages)."""
        out: dict[str, Any] = {"schema_version": self.schema_version}
        if self.tests is not None:
            out["tests"] = {
                "outcomes": self.tests.outcomes,
                "failures": [
                    {"id": f.id, "outcome": f.outcome, "message": f.message[:message]}
                    for f in self.tests.failures[:failures]
                ],
                "failures_listed": len(self.tests.failures),
                "truncated": self.tests.truncated,
            }
        if self.legs:
            out["legs"] = [leg.model_dump(mode="json") for leg in self.legs]
        return out


class Progress(_Open):
    done: int = Field(ge=0)
    total: int = Field(ge=1, le=100_000)
    step: str | None = Field(default=None, max_length=200)

    @model_validator(mode="after")
    def _done_within_total(self) -> Progress:
        if self.done > self.total:
            raise ValueError(f"done ({self.done}) must not exceed total ({self.total})")
        return self
