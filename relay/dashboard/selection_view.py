"""Serving a stored selection report, which a downstream produced and we do not trust.

The HTML goes out as its own document under a CSP `sandbox` (no scripts, a
unique opaque origin, no forms, no plugins), may load nothing from anywhere
except inline styles and data: images, and may not be framed. So a report
with a `<script>` in it renders as inert markup and cannot read the
dashboard's origin. Without HTML, the summary is rendered by our own template.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import HTMLResponse, JSONResponse, Response

from relay.dashboard import queries
from relay.dashboard.presentation import selection_digest
from relay.dashboard.render import render
from relay.dashboard.responses import SECURITY_HEADERS, error_page
from relay.store.base import Store

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


def selection_response(store: Store, now: float, selection_id: str, *, as_json: bool) -> Response:
    with store.transaction(write=False) as tx:
        row = queries.selection_report(tx, selection_id)
    if row is None:
        message = f"No selection report {selection_id!r} is stored."
        if as_json:
            return JSONResponse({"detail": message}, status_code=404, headers=SECURITY_HEADERS)
        return error_page(404, "No such selection report", message, now)
    page = _page(row, now)
    if as_json:
        return JSONResponse(page, headers=SECURITY_HEADERS)
    if row["html"]:
        return HTMLResponse(str(row["html"]), headers=REPORT_HEADERS)
    body = render(
        "selection.html.j2",
        page,
        nav="",
        api_url=f"/api/selection/{selection_id}",
        refresh_seconds=0,
    )
    return HTMLResponse(body, headers=SECURITY_HEADERS)


def _page(row: dict[str, Any], now: float) -> dict[str, Any]:
    return {
        "now": now,
        "selection_id": row["selection_id"],
        "repo": row["repo"],
        "delivery_id": row["delivery_id"],
        "created_at": row["created_at"],
        "has_html": bool(row["html"]),
        **selection_digest(row["summary"]),
    }
