"""Re-runs asked for on the upstream PR (an ``INGEST_HOOKS`` entry).

- ``check_run`` rerequested on one of our check runs (``crcr/<owner>/<repo>/...``,
  ``external_id`` ``"<run_id>:<pr>"``): re-run the failed jobs of that run.
- ``check_suite`` rerequested: re-run every downstream run reported on the
  suite's head SHA, each once.

Only L3/L4 repositories (the ones with check runs), only GitHub Actions runs
(a Buildkite build cannot be re-run through GitHub's API). The re-runs are
outbox jobs (kind ``rerun``) enqueued in the ingest transaction, deduplicated
per delivery and run, so a redelivered webhook re-runs nothing twice. Each one grants
the run's next attempt its dispatch's callback token (``relay.callbacks.run_binding``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relay.callbacks.run_binding import grant_rerun
from relay.checks import parse_check_name, parse_external_id
from relay.outbox import enqueue
from relay.store import Tx

if TYPE_CHECKING:
    from relay.allowlist import Allowlist
    from relay.state import RelayState
    from relay.webhook.ingest import StoredDelivery
    from relay.webhook.routing import Route

RERUN_LEVELS = frozenset({"L3", "L4"})


def on_ingest(state: RelayState, tx: Tx, delivery: StoredDelivery, route: Route) -> int:
    if route.kind != "rerun":
        return 0
    allowlist = state.allowlist.current()
    if delivery.event == "check_run":
        runs = _check_run_target(delivery.payload, allowlist, state.config.github.app_id)
        failed_only = True
    else:
        runs = _suite_runs(tx, route.head_sha, allowlist)
        failed_only = False
    added = 0
    for repo, run_id in runs:
        queued = enqueue(
            tx,
            kind="rerun",
            target=repo,
            body={"run_id": run_id, "failed_only": failed_only},
            dedupe_key=f"rerun:{delivery.delivery_id}:{repo}:{run_id}",
            delivery_id=delivery.delivery_id,
            now=delivery.received_at,
        )
        if queued:  # the re-run's attempt may report with its dispatch's token
            grant_rerun(tx, repo, run_id, delivery.received_at)
        added += queued
    return added


def _check_run_target(
    payload: dict[str, Any], allowlist: Allowlist, app_id: str | None
) -> list[tuple[str, int]]:
    check_run = payload.get("check_run") or {}
    app = check_run.get("app") or {}
    if app_id is not None and str(app.get("id")) != str(app_id):
        return []  # another App's check run
    named = parse_check_name(str(check_run.get("name") or ""))
    parsed = parse_external_id(check_run.get("external_id"))
    if named is None or parsed is None:
        return []
    entry = allowlist.get(named[0])
    if entry is None or entry.level not in RERUN_LEVELS:
        return []
    return [(entry.repo, parsed[0])]


def _suite_runs(tx: Tx, head_sha: str | None, allowlist: Allowlist) -> list[tuple[str, int]]:
    # The route's head SHA: checked by routing (text the store can take), unlike the raw field.
    if not head_sha:
        return []
    rows = tx.fetchall(
        "SELECT DISTINCT repo, run_id FROM job_runs WHERE head_sha = ?"
        " AND identity LIKE ? ORDER BY repo, run_id",
        (head_sha, "github_actions:%"),
    )
    runs = []
    for row in rows:
        entry = allowlist.get(row["repo"])
        if entry is not None and entry.level in RERUN_LEVELS:
            runs.append((entry.repo, int(row["run_id"])))
    return runs
