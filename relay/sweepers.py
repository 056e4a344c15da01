"""Sweepers: what no event tells us (``PERIODIC_TASKS`` of the worker).

- ``timeouts_task``: jobs still in progress after ``in_progress_timeout_seconds``
  (6 h) become completed/timed_out in the store, on the HUD and on the PR.
- ``redeliver_task``: GitHub never retries a failed webhook delivery; we list the
  App's recent deliveries (``GET /app/hook/deliveries``) and ask GitHub to
  redeliver those that failed and that we never stored, bounded per sweep and at
  most ``MAX_REQUESTS_PER_GUID`` times per delivery.
- ``tags_task``: GitHub sends no tag events when more than 3 tags are pushed at
  once; we poll the upstream's tags and releases and dispatch a tag nobody told
  us about as the ``push`` GitHub would have sent. The first poll only records.
"""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx

from relay.callbacks.downstreams import downstream_of
from relay.callbacks.effects import enqueue_effects
from relay.callbacks.records import (
    KEY_WHERE,
    key_of,
    key_params,
    load_dispatch,
    mark_swept,
    state_of,
)
from relay.callbacks.settings import CallbackSettings, callback_settings
from relay.callbacks.state_machine import JobKey, time_out
from relay.github.auth import AppAuth
from relay.github.errors import GitHubPermanentError, interpret
from relay.outbox import Job, enqueue
from relay.store import Tx

if TYPE_CHECKING:
    from relay.state import RelayState

log = logging.getLogger("relay.sweepers")
MAX_SWEPT_PER_RUN = 500
MAX_REQUESTS_PER_GUID = 3
MAX_DELIVERY_PAGES = 5
TAG_DELIVERY_PREFIX = "tag-poll:"


# -- in-progress timeouts ----------------------------------------------------
def sweep_timeouts(state: RelayState, settings: CallbackSettings) -> int:
    now = state.clock.now()
    cutoff = now - settings.in_progress_timeout_seconds
    swept = 0
    with state.store.transaction() as tx:
        rows = tx.fetchall(
            "SELECT * FROM job_runs WHERE status = 'in_progress' AND in_progress_received_at < ?"
            " ORDER BY in_progress_received_at LIMIT ?",
            (cutoff, MAX_SWEPT_PER_RUN),
        )
        for row in rows:
            key = key_of(row)
            if not mark_swept(tx, key, time_out(state_of(row), now), now):
                continue
            _report_swept(tx, state, settings, key, now, "timed_out")
            swept += 1
    if swept:
        log.info(
            "marked %d job(s) timed_out after %.0f s", swept, settings.in_progress_timeout_seconds
        )
    return swept


def complete_abandoned_run(
    state: RelayState, delivery_id: str, repo: str, run_id: int, reason: str
) -> int:
    """Jobs of one run still in progress when the run is known to be over (its process
    ended) become completed/failure now, reported like any state change (HUD, check run
    or status), instead of waiting for the in-progress timeout. The reason is kept in the
    job's stored payload (`relay_completion_reason`) and logged. Returns the jobs changed."""
    settings = callback_settings(state.config.extra)
    now = state.clock.now()
    changed = 0
    with state.store.transaction() as tx:
        rows = tx.fetchall(
            "SELECT * FROM job_runs WHERE delivery_id = ? AND repo = ? AND run_id = ?"
            " AND status = 'in_progress'",
            (delivery_id, repo, run_id),
        )
        for row in rows:
            key = key_of(row)
            if not mark_swept(tx, key, time_out(state_of(row), now, "failure"), now):
                continue
            _note_reason(tx, row, reason)
            _report_swept(tx, state, settings, key, now)
            changed += 1
    if changed:
        log.warning(
            "run %s of %s for delivery %s ended without reporting completion: %d job(s)"
            " marked failure (%s)",
            run_id,
            repo,
            delivery_id,
            changed,
            reason,
            extra={"delivery_id": delivery_id, "target": repo},
        )
    return changed


def _report_swept(
    tx: Tx,
    state: RelayState,
    settings: CallbackSettings,
    key: JobKey,
    now: float,
    step: str | None = None,
) -> None:
    """Forward a swept job's new state like any callback's (HUD, check run or status),
    at the level and with the labels its dispatch had."""
    entry = downstream_of(state, key.repo)
    dispatch = load_dispatch(tx, key.delivery_id, key.repo)
    labels = dispatch.labels if dispatch else ()
    level = entry.level if entry else (dispatch.level if dispatch else None) or "L2"
    device = entry.device if entry else None
    enqueue_effects(tx, state, settings, key, level, device, labels, now, step)


def _note_reason(tx: Tx, row: dict[str, Any], reason: str) -> None:
    try:
        payload = json.loads(row.get("last_payload") or "{}")
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    payload["relay_completion_reason"] = reason
    tx.execute(
        f"UPDATE job_runs SET last_payload = ? WHERE {KEY_WHERE}",
        (json.dumps(payload), *key_params(key_of(row))),
    )


def timeouts_task(state: RelayState) -> None:
    sweep_timeouts(state, callback_settings(state.config.extra))


# -- failed webhook deliveries -------------------------------------------------
class AppClient:
    """Requests authenticated as the GitHub App itself (JWT), not an installation."""

    def __init__(self, state: RelayState) -> None:
        self.client = state.github()
        self.timeout = state.config.github.timeout_seconds

    def request(self, method: str, url_or_path: str) -> httpx.Response:
        auth = self.client.auth
        if not isinstance(auth, AppAuth):
            raise GitHubPermanentError("webhook redelivery needs a GitHub App (github.app_id)")
        url = url_or_path if "://" in url_or_path else self.client.api_url + url_or_path
        pacing = self.client.pacer.turn() if method != "GET" else nullcontext()
        headers = {
            "Authorization": f"Bearer {auth.app_jwt()}",
            "Accept": "application/vnd.github+json",
        }
        with pacing, httpx.Client(timeout=self.timeout) as http:
            response = http.request(method, url, headers=headers)
        interpret(response.status_code, response.headers, response.text, f"{method} {url_or_path}")
        return response


def recent_deliveries(app: AppClient, since: float) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    url: str | None = "/app/hook/deliveries?per_page=100"
    for _ in range(MAX_DELIVERY_PAGES):
        if url is None:
            break
        response = app.request("GET", url)
        page = response.json()
        found.extend(page)
        if not page or _delivered_at(page[-1]) < since:
            break
        url = response.links.get("next", {}).get("url")
    return [d for d in found if _delivered_at(d) >= since]


def failed_guids(deliveries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """guid -> its newest failed delivery, for guids none of whose attempts succeeded (pure)."""
    by_guid: dict[str, list[dict[str, Any]]] = {}
    for delivery in deliveries:
        by_guid.setdefault(str(delivery.get("guid")), []).append(delivery)
    failed = {}
    for guid, attempts in by_guid.items():
        if any(200 <= int(a.get("status_code") or 0) < 300 for a in attempts):
            continue
        failed[guid] = max(attempts, key=_delivered_at)
    return failed


def sweep_failed_deliveries(state: RelayState, settings: CallbackSettings) -> int:
    if not settings.redeliver_failed_webhooks or settings.redeliver_max_per_sweep == 0:
        return 0
    now = state.clock.now()
    deliveries = recent_deliveries(AppClient(state), now - settings.redeliver_lookback_seconds)
    asked = 0
    with state.store.transaction() as tx:
        for guid, delivery in sorted(failed_guids(deliveries).items()):
            if asked >= settings.redeliver_max_per_sweep:
                break
            if _stored(tx, guid) or _requests_for(tx, guid) >= MAX_REQUESTS_PER_GUID:
                continue
            hook_id = str(delivery["id"])
            inserted = tx.execute(
                "INSERT INTO redelivery_requests (hook_delivery_id, guid, event, requested_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (hook_delivery_id) DO NOTHING",
                (hook_id, guid, delivery.get("event"), now),
            )
            if inserted and enqueue(
                tx,
                kind="redeliver",
                target="app",
                body={"hook_delivery_id": hook_id, "guid": guid},
                dedupe_key=f"redeliver:{hook_id}",
                delivery_id=guid,
                now=now,
            ):
                asked += 1
    if asked:
        log.info("asked GitHub to redeliver %d failed webhook delivery(ies)", asked)
    return asked


def _stored(tx: Tx, guid: str) -> bool:
    return tx.fetchone("SELECT 1 AS x FROM deliveries WHERE delivery_id = ?", (guid,)) is not None


def _requests_for(tx: Tx, guid: str) -> int:
    return int(tx.scalar("SELECT COUNT(*) FROM redelivery_requests WHERE guid = ?", (guid,)) or 0)


def _delivered_at(delivery: dict[str, Any]) -> float:
    value = str(delivery.get("delivered_at") or "1970-01-01T00:00:00Z")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class Redeliverer:
    """Outbox handler (kind ``redeliver``): ``POST /app/hook/deliveries/{id}/attempts``."""

    def __init__(self, state: RelayState) -> None:
        self.state = state
        self._app: AppClient | None = None

    def __call__(self, job: Job) -> None:
        self._app = self._app or AppClient(self.state)
        self._app.request("POST", f"/app/hook/deliveries/{job.body['hook_delivery_id']}/attempts")
        return None


def redeliver_task(state: RelayState) -> None:
    settings = callback_settings(state.config.extra)
    if state.config.github.app_id is None:
        return  # redelivery is an App API; a token-only relay has nothing to ask
    sweep_failed_deliveries(state, settings)


# -- tags and releases ----------------------------------------------------------
def upstream_tags(state: RelayState) -> dict[str, str]:
    """Tag name -> commit SHA, from the newest tags and releases of the upstream."""
    upstream = state.config.upstream_repo
    client = state.github()
    tags = client.request("GET", f"/repos/{upstream}/tags?per_page=100", repo=upstream).json()
    found = {t["name"]: t["commit"]["sha"] for t in tags if t.get("commit")}
    releases = client.request("GET", f"/repos/{upstream}/releases?per_page=30", repo=upstream)
    for release in releases.json():
        name = release.get("tag_name")
        if name and name not in found:
            commit = client.request("GET", f"/repos/{upstream}/commits/{name}", repo=upstream)
            found[name] = commit.json()["sha"]
    return found


def poll_tags(state: RelayState) -> list[str]:
    """Dispatch tags nobody told us about; return their names."""
    from relay.webhook.ingest import StoredDelivery, ingest
    from relay.webhook.routing import route

    tags = upstream_tags(state)
    now = state.clock.now()
    with state.store.transaction() as tx:
        known = {r["tag"] for r in tx.fetchall("SELECT tag FROM known_tags")}
        baseline = not known
        known |= _tags_seen_by_webhook(tx, now - 7 * 86400)
    missed = [] if baseline else sorted(t for t in tags if t not in known)
    for tag in missed:
        payload = _tag_push_payload(state.config.upstream_repo, tag, tags[tag])
        raw = json.dumps(payload).encode()
        delivery = StoredDelivery(f"{TAG_DELIVERY_PREFIX}{tag}", "push", payload, raw, now)
        ingest(state, delivery, route("push", payload, state.config.upstream_repo))
    with state.store.transaction() as tx:
        for tag, sha in tags.items():
            source = "baseline" if baseline else ("poll" if tag in missed else "seen")
            tx.execute(
                "INSERT INTO known_tags (tag, sha, source, seen_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (tag) DO NOTHING",
                (tag, sha, source, now),
            )
    if missed:
        log.warning("dispatched %d tag(s) GitHub sent no event for: %s", len(missed), missed)
    return missed


def _tags_seen_by_webhook(tx: Tx, since: float) -> set[str]:
    rows = tx.fetchall(
        "SELECT payload FROM deliveries WHERE event = 'push' AND received_at >= ?"
        " AND payload LIKE ?",
        (since, "%refs/tags/%"),
    )
    seen = set()
    for row in rows:
        ref = str(json.loads(row["payload"]).get("ref") or "")
        if ref.startswith("refs/tags/"):
            seen.add(ref[len("refs/tags/") :])
    return seen


def _tag_push_payload(upstream: str, tag: str, sha: str) -> dict[str, Any]:
    """The fields of a tag-creation ``push`` downstream workflows read."""
    return {
        "ref": f"refs/tags/{tag}",
        "before": "0" * 40,
        "after": sha,
        "created": True,
        "deleted": False,
        "forced": False,
        "base_ref": None,
        "commits": [],
        "head_commit": {"id": sha},
        "repository": {"full_name": upstream},
        "pusher": {"name": "spyre-ci-relay (tag poll)"},
        "sender": {"login": "spyre-ci-relay"},
    }


def tags_task(state: RelayState) -> None:
    settings = callback_settings(state.config.extra)
    # The App is installed on the upstream (it creates the check runs there); a
    # token-only relay may not be allowed to read it, so it polls only if told to.
    if settings.poll_releases is True or (
        settings.poll_releases is None and state.config.github.app_id is not None
    ):
        poll_tags(state)
