"""Check runs and commit statuses on the upstream PR for L3/L4 repositories (pure).

As CRCR ships them: one check run per state change, created and never updated
(GitHub shows the newest per name), named ``crcr/<owner>/<repo>/<workflow>/<job>``
with ``external_id`` ``"<run_id>:<pr>"``. L4 always; L3 only while the PR
carries ``ciflow/crcr/<device>``. A commit status (for deployments that cannot
install an App) uses the same name as context and changes only with the state.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from relay.store import Row

LABEL_PREFIX = "ciflow/crcr/"
CHECK_NAME_PREFIX = "crcr/"
MAX_STATUS_DESCRIPTION = 140
MAX_CHECK_NAME = 255
MAX_SUMMARY = 65535  # GitHub's limit on a check run's output.summary


def wants_report(level: str | None, device: str | None, labels: tuple[str, ...]) -> bool:
    if level == "L4":
        return True
    return level == "L3" and device is not None and f"{LABEL_PREFIX}{device}" in labels


def check_name(repo: str, workflow: str | None, job: str) -> str:
    return f"{CHECK_NAME_PREFIX}{repo}/{workflow or 'workflow'}/{job}"[:MAX_CHECK_NAME]


def parse_check_name(name: str) -> tuple[str, str, str] | None:
    """``crcr/owner/repo/workflow/job`` -> (owner/repo, workflow, job); None if not ours."""
    if not name.startswith(CHECK_NAME_PREFIX):
        return None
    parts = name[len(CHECK_NAME_PREFIX) :].split("/", 3)
    if len(parts) < 4 or not all(parts):
        return None
    return f"{parts[0]}/{parts[1]}", parts[2], parts[3]


def parse_external_id(external_id: object) -> tuple[int, int | None] | None:
    """``"<run_id>:<pr>"`` -> (run_id, pr); None if malformed (not text, not ASCII digits,
    or a number too large to be one of GitHub's ids)."""
    if not isinstance(external_id, str):
        return None
    run, _, pr = external_id.partition(":")
    run_id, pr_number = _github_id(run), _github_id(pr)
    return None if run_id is None else (run_id, pr_number)


def _github_id(text: str) -> int | None:
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        return None  # at most 18 digits: always below 2**63, the store's BIGINT
    return int(text)


def details_url(public_url: str, row: Row) -> str:
    """Where the check links to: the relay's own page of this delivery and repository."""
    return (
        f"{public_url.rstrip('/')}/crcr/deliveries/{quote(row['delivery_id'], safe='')}"
        f"?repo={quote(row['repo'], safe='')}"
    )


def check_run_request(row: Row, head_sha: str, details: str) -> dict[str, Any]:
    """The body of ``POST /repos/{upstream}/check-runs`` for the job's current state."""
    body: dict[str, Any] = {
        "name": check_name(row["repo"], row.get("workflow_name"), row["job_name"]),
        "head_sha": head_sha,
        "external_id": f"{row['run_id']}:{row.get('pr_number') or ''}",
        "details_url": details,
        "status": row["status"],
        "output": {"title": _title(row), "summary": _summary(row)},
    }
    started = row.get("in_progress_received_at")
    if started is not None:
        body["started_at"] = _iso(float(started))
    if row["status"] == "completed":
        body["conclusion"] = row.get("conclusion") or "neutral"
        body["completed_at"] = _iso(float(row.get("completed_received_at") or started or 0))
    return body


def commit_status_request(row: Row, details: str) -> dict[str, Any]:
    """The body of ``POST /repos/{upstream}/statuses/{sha}``."""
    state = "pending"
    if row["status"] == "completed":
        state = {"success": "success", "skipped": "success", "neutral": "success"}.get(
            row.get("conclusion") or "", "failure"
        )
    return {
        "state": state,
        "context": check_name(row["repo"], row.get("workflow_name"), row["job_name"]),
        "target_url": details,
        "description": _cut(f"{_title(row)}: {row['job_name']}", MAX_STATUS_DESCRIPTION),
    }


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _title(row: Row) -> str:
    if row["status"] != "completed":
        return f"{row['repo']}: running"
    title = f"{row['repo']}: {row.get('conclusion') or 'completed'}"
    if row.get("tests_total") is not None:
        title += (
            f" ({row['tests_passed']} passed, {row['tests_failed']} failed,"
            f" {row['tests_skipped']} skipped)"
        )
    return title


def _summary(row: Row) -> str:
    lines = [f"Downstream job `{row['job_name']}` of `{row['repo']}`."]
    if row.get("url"):
        lines.append(f"Run: {row['url']}")
    if row.get("queue_time") is not None:
        lines.append(f"Queue time: {float(row['queue_time']):.0f} s")
    if row.get("execution_time") is not None:
        lines.append(f"Execution time: {float(row['execution_time']):.0f} s")
    if row.get("swept_at") is not None:
        conclusion = row.get("conclusion") or "timed_out"
        if conclusion == "timed_out":
            lines.append("Marked timed_out by the relay: no completion was reported in time.")
        else:
            lines.append(f"Marked {conclusion} by the relay: {_relay_reason(row)}.")
    elif row.get("failure_kind") == "infrastructure":
        lines.append(
            f"Infrastructure failure ({row.get('failure_step') or 'no test ran'}): not a test regression."
        )
    lines += _failed_tests(row)
    lines.append("Details: the relay's run page (failed tests, messages, history, log).")
    return _cut("\n\n".join(lines), MAX_SUMMARY)


def _failed_tests(row: Row) -> list[str]:
    """The failed tests the run reported (the first ones, as the stored payload keeps them)."""
    try:
        payload = json.loads(row.get("last_payload") or "{}")
    except ValueError:
        return []
    report = payload.get("run_report") if isinstance(payload, dict) else None
    tests = report.get("tests") if isinstance(report, dict) else None
    if not isinstance(tests, dict) or not isinstance(tests.get("failures"), list):
        return []
    items = []
    for failure in tests["failures"]:
        if isinstance(failure, dict):
            first = str(failure.get("message") or "").strip().splitlines()[:1]
            items.append(f"- `{failure.get('id')}`" + (f": {first[0][:300]}" if first else ""))
    if not items:
        return []
    listed = tests.get("failures_listed", len(items))
    return [f"Failed tests ({listed}, the first {len(items)} here):\n" + "\n".join(items)]


def _relay_reason(row: Row) -> str:
    try:
        payload = json.loads(row.get("last_payload") or "{}")
    except ValueError:
        payload = {}
    reason = payload.get("relay_completion_reason") if isinstance(payload, dict) else None
    return str(reason or "the run ended without reporting completion")


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
