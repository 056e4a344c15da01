"""Response helpers shared by the dashboard's routes: security headers and error pages."""

from __future__ import annotations

from fastapi.responses import HTMLResponse

from relay.dashboard.render import render

# Our own pages: nothing but our stylesheet and script, never framed.
PAGE_CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": PAGE_CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def error_page(status: int, heading: str, message: str, now: float) -> HTMLResponse:
    body = render(
        "error.html.j2",
        {"now": now},
        nav="",
        api_url="/api/crcr",
        refresh_seconds=0,
        status=status,
        heading=heading,
        message=message,
    )
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)
