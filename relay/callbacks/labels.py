"""A ``ciflow/crcr/<device>`` label added to or removed from a PR (an ``INGEST_HOOKS`` entry).

CRCR's L3 rule: check runs only while the PR carries the device's label. A label
added while jobs run, or after they finished, backfills one check run per job
from the recorded state (the newest state only: GitHub shows the newest per
name), and the PR's dispatch records learn the label so that later callbacks
of running jobs report too. Runs inside the ingest transaction of the
``labeled`` delivery, so a redelivered label event does nothing twice.

Removing the label (``unlabeled``) makes the PR's dispatch records forget it:
later state changes of its jobs get no check run. The check runs already on
the PR stay, as GitHub keeps them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from relay.callbacks.effects import enqueue_status_reports, step_of
from relay.callbacks.records import key_of, key_to_list
from relay.callbacks.settings import callback_settings
from relay.checks import LABEL_PREFIX
from relay.store import Tx

if TYPE_CHECKING:
    from relay.state import RelayState
    from relay.webhook.ingest import StoredDelivery
    from relay.webhook.routing import Route


def on_ingest(state: RelayState, tx: Tx, delivery: StoredDelivery, route: Route) -> int:
    if route.kind != "label" or route.device is None or route.pr_number is None:
        return 0
    label = f"{LABEL_PREFIX}{route.device}"
    settings = callback_settings(state.config.extra)
    added = 0
    for entry in state.allowlist.current().repos_for_device(route.device):
        if entry.level != "L3":
            continue
        if route.action == "unlabeled":
            _set_label(tx, entry.repo, route.pr_number, label, present=False)
            continue
        _set_label(tx, entry.repo, route.pr_number, label, present=True)
        for row in _jobs_of_pr(tx, entry.repo, route.pr_number, route.head_sha):
            key = key_of(row)
            body = {"job": key_to_list(key), "step": step_of(row), "level": entry.level}
            added += enqueue_status_reports(tx, state, settings, key, body, delivery.received_at)
    return added


def _set_label(tx: Tx, repo: str, pr_number: int, label: str, *, present: bool) -> None:
    """Add `label` to (or drop it from) the labels of the PR's dispatch records."""
    suffix = " FOR UPDATE" if tx.dialect == "postgres" else ""
    rows = tx.fetchall(
        "SELECT delivery_id, labels FROM dispatches WHERE pr_number = ? AND LOWER(repo) = LOWER(?)"
        + suffix,
        (pr_number, repo),
    )
    for row in rows:
        labels = json.loads(row["labels"]) if row.get("labels") else []
        if (label in labels) != present:
            wanted = [*labels, label] if present else [x for x in labels if x != label]
            tx.execute(
                "UPDATE dispatches SET labels = ? WHERE delivery_id = ? AND LOWER(repo) = LOWER(?)",
                (json.dumps(wanted), row["delivery_id"], repo),
            )


def _jobs_of_pr(tx: Tx, repo: str, pr_number: int, head_sha: str | None) -> list[dict]:
    sql = "SELECT * FROM job_runs WHERE pr_number = ? AND LOWER(repo) = LOWER(?)"
    params: tuple[object, ...] = (pr_number, repo)
    if head_sha:
        sql += " AND head_sha = ?"
        params = (*params, head_sha)
    return tx.fetchall(sql, params)
