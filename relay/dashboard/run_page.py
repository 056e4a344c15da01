"""The run (delivery) page's details: steps, log tail, failed tests, links both ways.

`enrich` adds them to a delivery's change page (`grid.change_page(delivery=...)`): for
every job, its steps and their outcomes, the tail of the failing step's log, the
per-outcome counts, a link to the JUnit files, and its failed tests with messages,
history, suspect range and suspect change (`failures`).
"""

from __future__ import annotations

import json
from typing import Any

from relay.dashboard import failures, queries, results_queries, upstream
from relay.dashboard.safeurl import allowed_link
from relay.store.base import Tx


def details_of(text: str | None, repo: str) -> dict[str, Any] | None:
    """A job's stored run_details, read defensively; only a safe JUnit link survives."""
    try:
        raw = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    steps = [s for s in raw.get("steps") or [] if isinstance(s, dict)]
    tail = _mapping(raw.get("log_tail"))
    outcomes = _mapping(raw.get("outcomes"))
    truncated = _mapping(raw.get("truncated"))
    return {
        "steps": [
            {k: str(s.get(k) or "")[:200] for k in ("job", "name", "kind", "outcome")}
            for s in steps[:500]
        ],
        "log_tail": {
            "step": str(tail.get("step") or "")[:300],
            "text": str(tail.get("text") or "")[-64 * 1024 :],
            "truncated": bool(tail.get("truncated")),
        }
        if tail
        else None,
        "outcomes": {str(k): v for k, v in outcomes.items() if isinstance(v, int)},
        "truncated": {str(k): v for k, v in truncated.items() if isinstance(v, int) and v},
        "junit_url": allowed_link(raw.get("junit_url"), repo),
    }


def enrich(tx: Tx, page: dict[str, Any]) -> dict[str, Any]:
    """Add steps, log tails and failed tests to every job of a delivery page."""
    delivery = page["delivery_id"]
    webhook = queries.upstream_delivery(tx, delivery)
    upstream_repo = upstream.repo_of(webhook["payload"]) if webhook else None
    for backend in page["backends"]:
        repo = backend["repo"]
        jobs = backend["jobs"]
        if not jobs:
            continue
        stored = results_queries.job_details(tx, delivery, repo)
        selection_ids = [j["selection_id"] for j in jobs if j["selection_id"]]
        summaries = {
            sid: row["summary"]
            for sid, row in queries.selection_summaries(tx, sorted(set(selection_ids))).items()
        }
        selection_of = {_key(j): j["selection_id"] for j in jobs}
        found = failures.failures_by_job(tx, delivery, repo, summaries, selection_of, upstream_repo)
        for job in jobs:
            row = stored.get(_key(job))
            job["details"] = details_of(row["run_details"] if row else None, repo)
            job["failures"] = found.get(_key(job), [])
            job["flaky_failures"] = sum(1 for f in job["failures"] if f["flaky"])
    page["upstream_repo"] = upstream_repo
    return page


def count_flaky(tx: Tx, page: dict[str, Any]) -> dict[str, Any]:
    """PR and commit pages: how many of each job's failed tests are flaky (counted apart)."""
    for backend in page["backends"]:
        failing = [j for j in backend["jobs"] if (j["tests"] or {}).get("failed")]
        for delivery in sorted({j["delivery_id"] for j in failing}):
            found = failures.failures_by_job(tx, delivery, backend["repo"], {}, {}, None)
            for job in failing:
                if job["delivery_id"] == delivery:
                    job["flaky_failures"] = sum(1 for f in found.get(_key(job), []) if f["flaky"])
    return page


def _key(job: dict[str, Any]) -> tuple[Any, ...]:
    return (job["run_id"], job["run_attempt"], job["job_name"])


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
