"""Serving a stored selection report, which a downstream produced and we do not trust.

`/selection/{id}` is our own page: the summary, and links back to the run and the
backend it belongs to and to the full HTML report. The HTML (`/selection-html/{id}`)
goes out as its own document under a CSP `sandbox` (no scripts, a unique opaque
origin, no forms, no plugins), may load nothing from anywhere except inline styles
and data: images, and may not be framed. So a report with a `<script>` in it renders
as inert markup and cannot read the dashboard's origin.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse, JSONResponse, Response

from relay.dashboard import queries
from relay.dashboard.failures import run_url
from relay.dashboard.presentation import selection_digest
from relay.dashboard.render import render
from relay.dashboard.responses import SECURITY_HEADERS, error_page
from relay.store.base import Store, Tx

REPORT_CSP = (
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
REPORT_HEADERS = {
    "Content-Security-Policy": REPORT_CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _missing(selection_id: str, now: float, as_json: bool) -> Response:
    message = f"No selection report {selection_id!r} is stored."
    if as_json:
        return JSONResponse({"detail": message}, status_code=404, headers=SECURITY_HEADERS)
    return error_page(404, "No such selection report", message, now)


def selection_html_response(store: Store, now: float, selection_id: str) -> Response:
    """The stored HTML report, sandboxed; 404 when the downstream uploaded none."""
    with store.transaction(write=False) as tx:
        row = queries.selection_report(tx, selection_id)
    if row is None or not row["html"]:
        return _missing(selection_id, now, as_json=False)
    return HTMLResponse(str(row["html"]), headers=REPORT_HEADERS)


def selection_response(store: Store, now: float, selection_id: str, *, as_json: bool) -> Response:
    with store.transaction(write=False) as tx:
        row = queries.selection_report(tx, selection_id)
        job = _job_of(tx, row) if row is not None else None
    if row is None:
        return _missing(selection_id, now, as_json)
    page = _page(row, now, job)
    if as_json:
        return JSONResponse(page, headers=SECURITY_HEADERS)
    body = render(
        "selection.html.j2",
        page,
        nav="",
        api_url=f"/api/selection/{selection_id}",
        refresh_seconds=0,
    )
    return HTMLResponse(body, headers=SECURITY_HEADERS)


def _job_of(tx: Tx, report: dict[str, Any]) -> dict[str, Any] | None:
    """The job that uploaded the report (its conclusion and failed-test count)."""
    return tx.fetchone(
        "SELECT delivery_id, repo, job_name, status, conclusion, failure_kind, tests_failed"
        " FROM job_runs WHERE delivery_id = ? AND repo = ? AND selection_id = ?"
        " ORDER BY run_attempt DESC LIMIT 1",
        (report["delivery_id"], report["repo"], report["selection_id"]),
    )


def _page(row: dict[str, Any], now: float, job: dict[str, Any] | None) -> dict[str, Any]:
    repo, delivery = row["repo"], row["delivery_id"]
    return {
        "now": now,
        "selection_id": row["selection_id"],
        "repo": repo,
        "delivery_id": delivery,
        "created_at": row["created_at"],
        "has_html": bool(row["html"]),
        # links back: the run this selection chose tests for, its backend, the full report
        "run_url": run_url(delivery, repo) if delivery and repo else None,
        "backend_url": f"/crcr/{repo}" if repo else None,
        "html_url": f"/selection-html/{quote(row['selection_id'], safe='/')}"
        if row["html"]
        else None,
        "job": job,
        **selection_digest(row["summary"]),
    }
