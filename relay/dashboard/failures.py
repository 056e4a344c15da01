"""Failed tests as the run page shows them: message, history, suspect range and change, flakiness.

Reads through `results_queries` and applies the pure rules of `relay.results`
(`history`, `suspects`). Everything shown came from a downstream and is escaped by the
templates; links are built here (the relay's own pages, GitHub's compare view of the
upstream repository named by the stored webhook), never taken from callback data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from relay.dashboard import results_queries
from relay.results import history
from relay.results.suspects import causes_by_test, suspect_change
from relay.store.base import Row, Tx

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")


def run_url(delivery_id: str, repo: str) -> str:
    return f"/crcr/deliveries/{quote(delivery_id, safe='')}?repo={quote(repo, safe='')}"


def page_of_test(node_id: str, repo: str | None = None) -> str:
    url = f"/crcr/test?id={quote(node_id, safe='')}"
    return url + (f"&repo={quote(repo, safe='')}" if repo else "")


def compare_url(upstream_repo: str | None, good: str | None, bad: str | None) -> str | None:
    """GitHub's compare view of the suspect range, when every part is what it should be."""
    if not (upstream_repo and _REPO.match(upstream_repo) and good and bad):
        return None
    if not (_SHA.match(good) and _SHA.match(bad)):
        return None
    return f"https://github.com/{upstream_repo}/compare/{good}...{bad}"


def entries_of(status: Row | None) -> tuple[list[history.Entry], history.Entry | None]:
    """(kept history, the newest pass recorded apart) of a test_status row."""
    if status is None:
        return [], None
    last_pass = None
    if status.get("last_pass_at") is not None:
        last_pass = history.Entry(
            float(status["last_pass_at"]),
            "p",
            str(status.get("last_pass_sha") or ""),
            str(status.get("last_pass_delivery") or ""),
        )
    return history.decode(status.get("history")), last_pass


def history_view(entries: Sequence[history.Entry], repo: str) -> list[dict[str, Any]]:
    return [{**e.as_dict(), "url": run_url(e.delivery_id, repo)} for e in entries]


def verdict(
    entries: Sequence[history.Entry],
    last_pass: history.Entry | None,
    as_of: float,
    sha: str | None,
    upstream_repo: str | None,
) -> dict[str, Any]:
    """Suspect range as of a run (its event time) and whether the test flaked on its SHA
    (then it has no suspect range: the same commit passed)."""
    before = [e for e in entries if e.at <= as_of + 1e-3]
    found = history.suspect(before, last_pass)
    short = (sha or "")[: history.SHA_CHARS]
    on_sha = [e for e in entries if short and e.sha == short]
    flaky = any(e.failing for e in on_sha) and any(not e.failing for e in on_sha)
    out: dict[str, Any] = {"flaky": flaky, "suspect": None}
    if found is not None and not flaky:  # a flaky failure points at no upstream change
        suspect = found.as_dict()
        good = found.good.sha if found.good else None
        suspect["compare_url"] = compare_url(upstream_repo, good, found.failing_since.sha)
        out["suspect"] = suspect
    return out


def message_of(row: Row) -> dict[str, Any]:
    """What a failed test's row says: outcome, message (text, never markup), location."""
    return {"outcome": row["outcome"], "message": row["message"] or "", "location": row["location"]}


def failure_view(
    row: Row,
    status: Row | None,
    chains: Mapping[str, Any],
    upstream_repo: str | None,
) -> dict[str, Any]:
    entries, last_pass = entries_of(status)
    repo = str(row["repo"])
    view: dict[str, Any] = {
        "id": row["node_id"],
        **message_of(row),
        "duration": row["duration"],
        "shard": row["shard"],
        "test_url": page_of_test(str(row["node_id"]), repo),
        "history": history_view(entries, repo),
        "flaky_count": int((status or {}).get("flaky_count") or 0),
        "suspect_change": suspect_change(chains.get(str(row["node_id"]))),
    }
    view.update(verdict(entries, last_pass, float(row["event_at"]), row["head_sha"], upstream_repo))
    return view


def failures_by_job(
    tx: Tx,
    delivery_id: str,
    repo: str,
    summaries: Mapping[str, str | None],
    selection_of: Mapping[tuple[Any, ...], str | None],
    upstream_repo: str | None,
) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """`(run_id, run_attempt, job_name)` -> its failed tests, enriched."""
    rows = results_queries.failures_of(tx, delivery_id, repo)
    if not rows:
        return {}
    statuses = results_queries.statuses(tx, repo, [int(r["test_key"]) for r in rows])
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        job = (row["run_id"], row["run_attempt"], row["job_name"])
        chains = causes_by_test(summaries.get(selection_of.get(job) or ""))
        entry = failure_view(row, statuses.get(int(row["test_key"])), chains, upstream_repo)
        out.setdefault(job, []).append(entry)
    return out
