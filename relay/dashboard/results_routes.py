"""Routes of per-test results and selection reports (added to the dashboard's router).

    /crcr/test?id=<pytest node id>[&repo=owner/name]   one test on every backend
    /selection/{id}                                      a selection report: summary and links
    /selection-html/{id}                                 its stored HTML report (sandboxed)

each with its JSON twin under /api/.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Protocol
from urllib.parse import quote

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, Response

from relay.clock import Clock
from relay.dashboard.per_test import one_test_page
from relay.dashboard.responses import error_page
from relay.dashboard.selection_view import selection_html_response, selection_response
from relay.store.base import Store, Tx

_REPO = r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$"
MAX_TEST_ID = 1000


class _PageMaker(Protocol):
    def html(
        self,
        template: str,
        nav: str,
        api_url: str,
        build: Callable[[Tx, float], dict[str, Any]],
        extra: Any = None,
        not_found: Any = ...,
    ) -> Response: ...

    def json(
        self, build: Callable[[Tx, float], dict[str, Any]], not_found: Any = ...
    ) -> Response: ...


def _unknown_test(page: dict[str, Any]) -> str | None:
    if page["backends"]:
        return None
    where = f" on {page['repo']}" if page["repo"] else ""
    return f"No outcome of test {page['id']!r} is recorded{where} (within the retention period)."


def add_results_routes(router: APIRouter, pages: _PageMaker, store: Store, clock: Clock) -> None:
    @router.get("/crcr/test", response_class=HTMLResponse)
    def test_html(id: str = "", repo: str | None = None) -> Response:
        now = clock.now()
        if not 1 <= len(id) <= MAX_TEST_ID:
            return error_page(
                400, "Bad request", f"id: a pytest node id of 1 to {MAX_TEST_ID} characters.", now
            )
        if repo is not None and not re.match(_REPO, repo):
            return error_page(400, "Bad request", f"repo={repo[:60]!r}: expected owner/name.", now)
        api = f"/api/crcr/test?id={quote(id, safe='')}" + (
            f"&repo={quote(repo, safe='')}" if repo else ""
        )
        return pages.html(
            "test.html.j2", "", api, lambda tx, now: one_test_page(tx, now, id, repo),
            not_found=_unknown_test,
        )  # fmt: skip

    @router.get("/api/crcr/test")
    def test_json(
        id: Annotated[str, Query(min_length=1, max_length=MAX_TEST_ID)],
        repo: Annotated[str | None, Query(pattern=_REPO)] = None,
    ) -> Response:
        return pages.json(lambda tx, now: one_test_page(tx, now, id, repo), not_found=_unknown_test)

    @router.get("/selection-html/{selection_id:path}", response_class=HTMLResponse)
    def selection_report_html(selection_id: str) -> Response:
        return selection_html_response(store, clock.now(), selection_id)

    @router.get("/selection/{selection_id:path}", response_class=HTMLResponse)
    def selection_html(selection_id: str) -> Response:
        return selection_response(store, clock.now(), selection_id, as_json=False)

    @router.get("/api/selection/{selection_id:path}")
    def selection_json(selection_id: str) -> Response:
        return selection_response(store, clock.now(), selection_id, as_json=True)
