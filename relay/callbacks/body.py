"""The callback body as CRCR's callback action sends it, validated.

Body = the dispatched ``client_payload`` echoed back (``event_type``,
``delivery_id``, ``payload``, and our ``callback_token``) plus ``workflow``
(schema version "1"). Unknown keys are kept, so a newer callback action does
not break us; an optional ``selection`` object carries a selection report.
Errors name the field at fault (``workflow.test_results.total: ...``).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from relay.dispatch.payload import slim_payload
from relay.json_body import BIGINT_MAX, INTEGER_MAX, BadBody, control_character, parse_json_body
from relay.results.report import Progress, RunReport

M = TypeVar("M", bound=BaseModel)
PERIODIC_EVENTS = frozenset({"nightly", "periodic"})
CONCLUSIONS = frozenset(
    {"success", "failure", "cancelled", "skipped", "timed_out", "neutral", "action_required"}
)
MAX_SELECTION_HTML = 2 * 1024 * 1024


class BadCallback(Exception):
    """400: the body is not a valid callback; the message names the field."""


def _no_control_character(value: str) -> str:
    bad = control_character(value)
    if bad is not None:
        raise ValueError(f"contains a control character ({bad})")
    return value


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL character (U+0000)")
    return value


def _number_as_text(value: Any) -> Any:
    # A number (in a hand-written body) and its text (as the action sends it) are one id.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _run_number_in_range(value: str) -> str:
    if value.isdecimal() and int(value) > BIGINT_MAX:
        raise ValueError(f"a numeric run_id must not exceed {BIGINT_MAX}")
    return value


# Text stored in a column of its own (PostgreSQL refuses NUL; no id, name or URL has one).
ColumnText = Annotated[str, AfterValidator(_no_control_character)]
# A count in an INTEGER column (32-bit on PostgreSQL).
Count = Annotated[int, Field(ge=0, le=INTEGER_MAX)]
# As sent: GitHub's run id (digits; the action sends it as a string) or, from CRCR's
# Buildkite reporter, the build's UUID. The store keys jobs by `run_key(run_id)`.
RunId = Annotated[
    str,
    BeforeValidator(_number_as_text),
    Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$"),
    AfterValidator(_run_number_in_range),
]
RunAttempt = Annotated[int, Field(ge=1, le=INTEGER_MAX)]


def run_key(run_id: str) -> int:
    """The run id the store keys a job by: GitHub's number, or a stable number derived
    from a non-numeric id (a Buildkite build UUID), below 2**60."""
    if run_id.isdecimal():
        return int(run_id)
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:15], 16)


class TestResults(BaseModel):
    """Counts as CRCR's action documents them (``passed/failed/skipped``).

    ``total`` is optional there (the action passes the user's JSON through), so it
    is derived when absent and checked when given. Other keys (the HUD's type
    allows a ``failures`` list) are kept and forwarded.
    """

    model_config = ConfigDict(extra="allow")
    passed: Count
    failed: Count
    skipped: Count
    total: Count | None = None

    @model_validator(mode="after")
    def _total_is_the_sum(self) -> TestResults:
        if self.total is None:
            self.total = self.passed + self.failed + self.skipped
            if self.total > INTEGER_MAX:
                raise ValueError(f"passed + failed + skipped must not exceed {INTEGER_MAX}")
        elif self.total != self.passed + self.failed + self.skipped:
            raise ValueError(
                f"total ({self.total}) must equal passed + failed + skipped "
                f"({self.passed} + {self.failed} + {self.skipped})"
            )
        return self


class WorkflowReport(BaseModel):
    model_config = ConfigDict(extra="allow")
    schema_version: Literal["1"]
    status: Literal["in_progress", "completed"]
    conclusion: ColumnText | None = None
    name: ColumnText = Field(min_length=1, max_length=200)
    url: ColumnText | None = None
    run_id: RunId
    run_attempt: RunAttempt = 1
    job_name: ColumnText = Field(min_length=1, max_length=300)
    # GitHub's job.check_run_id, else "<run_id>-<run_attempt>" (CRCR's action falls
    # back to that, and so do we when it is missing: the HUD key needs one).
    check_run_id: ColumnText | None = Field(default=None, max_length=100)
    started_at: ColumnText | None = None
    completed_at: ColumnText | None = None
    test_results: TestResults | None = None
    artifact_url: ColumnText | None = None

    @field_validator("check_run_id", "test_results", "conclusion", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        # Shell-built bodies (CRCR's composite action) send "" or {} for "unknown".
        return None if value in ("", {}) else value

    @field_validator("check_run_id", "schema_version", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return _number_as_text(value)

    @property
    def run_key(self) -> int:
        return run_key(self.run_id)

    @field_validator("started_at", "completed_at")
    @classmethod
    def _iso_time(cls, value: str | None) -> str | None:
        if value:
            iso_seconds(value)
        return value

    @model_validator(mode="after")
    def _conclusion_when_completed(self) -> WorkflowReport:
        if self.check_run_id is None:
            self.check_run_id = f"{self.run_id}-{self.run_attempt}"
        if self.status == "completed" and self.conclusion not in CONCLUSIONS:
            raise ValueError(
                f"conclusion must be one of {sorted(CONCLUSIONS)} when status is completed "
                f"(got {self.conclusion!r})"
            )
        if self.status == "in_progress" and self.conclusion:
            raise ValueError("conclusion must be empty while status is in_progress")
        return self


class SelectionReport(BaseModel):
    """A selection run's report, stored for the dashboard (table selection_reports)."""

    model_config = ConfigDict(extra="forbid")
    selection_id: ColumnText | None = Field(default=None, min_length=1, max_length=200)
    summary: dict[str, Any]
    html: Annotated[str, AfterValidator(_no_nul)] | None = Field(
        default=None, max_length=MAX_SELECTION_HTML
    )


class CallbackBody(BaseModel):
    model_config = ConfigDict(extra="allow")
    event_type: ColumnText = Field(min_length=1, max_length=100)
    delivery_id: ColumnText = Field(min_length=1, max_length=200)
    payload: dict[str, Any] | None = None
    callback_token: str | None = None
    workflow: WorkflowReport
    selection: SelectionReport | None = None
    # spyre-ci's additions (relay/results/report.py); a CRCR callback action sends neither.
    run_report: RunReport | None = None
    progress: Progress | None = None

    @property
    def is_periodic(self) -> bool:
        return self.event_type in PERIODIC_EVENTS

    def for_storage(self, selection_id: str | None) -> dict[str, Any]:
        """What job_runs.last_payload keeps and the HUD receives as callback_payload.

        Not the callback token (a credential), not the selection report (stored in
        selection_reports; referenced by id), the run report only in its compact form
        (counts, the first failures; its rows are in test_failures and test_status), and
        the echoed webhook slimmed to the fields downstream workflows read (a
        pull_request payload is ~25 KB per job).
        """
        data = self.model_dump(
            mode="json", exclude={"callback_token", "selection", "run_report", "progress"}
        )
        if self.run_report is not None:
            data["run_report"] = self.run_report.compact()
        if data.get("payload"):
            data["payload"] = slim_payload(data["payload"])
            data["payload_slimmed"] = True
        if selection_id is not None:
            data["selection_id"] = selection_id
        return data

    def digest(self) -> str:
        """Identity of this report: two callbacks with the same digest are the same callback."""
        reported = {
            "workflow": self.workflow.model_dump(mode="json"),
            "selection": None if self.selection is None else self.selection.model_dump(),
        }
        # Not `progress`: an in_progress repeated to say how far the run is stays the
        # same report (a repeat), which only updates the progress.
        if self.run_report is not None:
            reported["run_report"] = self.run_report.model_dump(mode="json")
        canonical = json.dumps(reported, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def parse_callback(raw: bytes) -> CallbackBody:
    return parse_body(raw, CallbackBody)


def parse_body(raw: bytes, model: type[M]) -> M:
    """`raw` as `model` (a JSON object), or BadCallback naming what is wrong."""
    try:
        _, data = parse_json_body(raw)
    except BadBody as error:
        raise BadCallback(str(error)) from None
    if not isinstance(data, dict):
        raise BadCallback("body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise BadCallback(describe_validation_error(error)) from None


def describe_validation_error(error: ValidationError) -> str:
    parts = []
    for issue in error.errors():
        where = ".".join(str(p) for p in issue["loc"]) or "body"
        parts.append(f"{where}: {issue['msg']}")
    return "; ".join(parts)


def iso_seconds(value: str) -> float:
    """``2026-11-30T04:00:00Z`` -> unix seconds; ValueError naming the value otherwise."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return parsed.timestamp()
