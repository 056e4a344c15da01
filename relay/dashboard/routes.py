"""HTTP shell of the dashboard: an APIRouter with an HTML page and a JSON twin per view.

    app.include_router(dashboard_router(store))

HTML under `/crcr…` and `/selection/{id}`; the same data as JSON under
`/api/crcr…` and `/api/selection/{id}`. Handlers are sync (FastAPI runs them
in its thread pool) and only open a read transaction, call a page builder and
render it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from relay.clock import SYSTEM_CLOCK, Clock
from relay.dashboard import grid, metrics, views
from relay.dashboard.levels import LevelRecorder, LevelSource
from relay.dashboard.metrics_charts import charts_for
from relay.dashboard.presentation import CONCLUSIONS, FAILURE_KINDS
from relay.dashboard.render import render
from relay.dashboard.responses import SECURITY_HEADERS, error_page
from relay.dashboard.results_routes import add_results_routes
from relay.dashboard.rollup import Rollups
from relay.dashboard.search import MAX_QUERY, BadSearch, Search, parse_search
from relay.store.base import Store, Tx

_STATIC = {"dashboard.css": "text/css; charset=utf-8", "live.js": "text/javascript; charset=utf-8"}
_NAME = r"^[A-Za-z0-9_.-]{1,100}$"
_REPO = r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$"
_SHA = re.compile(r"^[0-9a-f]{7,40}$")

EventFilter = Literal["pr", "push", "nightly"]
EVENT_FILTER_VALUES = ("pr", "push", "nightly")
ConclusionFilter = Literal[CONCLUSIONS]  # type: ignore[valid-type]
KindFilter = Literal[FAILURE_KINDS]  # type: ignore[valid-type]


def dashboard_router(
    store: Store,
    clock: Clock = SYSTEM_CLOCK,
    refresh_seconds: int = 30,
    warm_cache: bool = True,
    levels: LevelSource | None = None,
) -> APIRouter:
    """`levels` returns the allowlist's current level of each repository; with it the
    dashboard keeps `repo_levels` (the level history) up to date."""
    router = APIRouter(tags=["dashboard"])
    recorder = LevelRecorder(store, levels)
    pages = _Pages(store, clock, refresh_seconds, recorder)
    rollups = Rollups()
    if warm_cache:
        _start_warmup(store, rollups, clock, recorder)

    @router.get("/crcr/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _STATIC:
            raise HTTPException(404, f"no static file {name!r}")
        body = (resources.files("relay.dashboard") / "static" / name).read_bytes()
        headers = {**SECURITY_HEADERS, "Cache-Control": "public, max-age=300"}
        return Response(body, media_type=_STATIC[name], headers=headers)

    _plain_view(router, pages, "crcr", "overview", lambda tx, now: views.overview(tx, now, rollups))

    @router.get("/crcr/metrics", response_class=HTMLResponse)
    def metrics_html(days: str = "14") -> Response:
        if not (days.isdigit() and 1 <= int(days) <= metrics.MAX_DAYS):
            return bad_parameter(
                "days", days, f"a whole number of days from 1 to {metrics.MAX_DAYS}", clock.now()
            )
        return _metrics_html(int(days))

    def _metrics_html(days: int) -> Response:
        def build(tx: Tx, now: float) -> dict[str, Any]:
            return metrics.metrics_page(tx, now, days, rollups)

        return pages.html(
            "metrics.html.j2", "metrics", f"/api/crcr/metrics?days={days}", build, charts_for
        )

    @router.get("/api/crcr/metrics")
    def metrics_json(days: Annotated[int, Query(ge=1, le=metrics.MAX_DAYS)] = 14) -> Response:
        return pages.json(lambda tx, now: metrics.metrics_page(tx, now, days, rollups))

    _plain_view(
        router,
        pages,
        "crcr/readiness",
        "readiness",
        lambda tx, now: views.readiness_table(tx, now, rollups),
    )

    @router.get("/crcr/pr/{number}", response_class=HTMLResponse)
    def pr_html(number: str) -> Response:
        if not (number.isdigit() and int(number) >= 1):
            return bad_parameter("number", number, "a pull request number (1 or more)", clock.now())
        pr = int(number)
        return pages.html(
            "change.html.j2",
            "",
            f"/api/crcr/pr/{pr}",
            lambda tx, now: grid.change_page(tx, now, pr=pr),
        )

    @router.get("/api/crcr/pr/{number}")
    def pr_json(number: Annotated[int, Path(ge=1)]) -> Response:
        return pages.json(lambda tx, now: grid.change_page(tx, now, pr=number))

    @router.get("/crcr/commit/{sha}", response_class=HTMLResponse)
    def commit_html(sha: str) -> Response:
        try:
            sha = _checked_sha(sha)
        except HTTPException as exc:
            return error_page(400, "Not a commit", str(exc.detail), clock.now())
        return pages.html(
            "change.html.j2",
            "",
            f"/api/crcr/commit/{sha}",
            lambda tx, now: grid.change_page(tx, now, sha=sha),
        )

    @router.get("/api/crcr/commit/{sha}")
    def commit_json(sha: str) -> Response:
        sha = _checked_sha(sha)
        return pages.json(lambda tx, now: grid.change_page(tx, now, sha=sha))

    @router.get("/crcr/deliveries/{delivery_id}", response_class=HTMLResponse)
    def delivery_html(delivery_id: str, repo: str | None = None) -> Response:
        if repo is not None and not re.match(_REPO, repo):
            return bad_parameter("repo", repo, "a repository as owner/name", clock.now())
        return pages.html(
            "change.html.j2",
            "",
            f"/api/crcr/deliveries/{quote(delivery_id, safe='')}",
            lambda tx, now: grid.change_page(tx, now, delivery=delivery_id, repo=repo),
        )

    @router.get("/api/crcr/deliveries/{delivery_id}")
    def delivery_json(
        delivery_id: str, repo: Annotated[str | None, Query(pattern=_REPO)] = None
    ) -> Response:
        return pages.json(
            lambda tx, now: grid.change_page(tx, now, delivery=delivery_id, repo=repo)
        )

    add_results_routes(router, pages, store, clock)

    @router.get("/crcr/{owner}/{repo}", response_class=HTMLResponse)
    def backend_html(
        request: Request,
        owner: str,
        repo: str,
        event: str | None = None,
        conclusion: str | None = None,
        kind: str | None = None,
        before: str | None = None,
        q: str | None = None,
    ) -> Response:
        now = clock.now()
        if not (re.match(_NAME, owner) and re.match(_NAME, repo)):
            return error_page(404, "Not found", f"No backend {owner}/{repo}.", now)
        if event and event not in EVENT_FILTER_VALUES:
            return bad_parameter("event", event, " or ".join(EVENT_FILTER_VALUES), now)
        if conclusion and conclusion not in CONCLUSIONS:
            return bad_parameter("conclusion", conclusion, ", ".join(CONCLUSIONS), now)
        if kind and kind not in FAILURE_KINDS:
            return bad_parameter("kind", kind, ", ".join(FAILURE_KINDS), now)
        if before and not _is_time(before):
            return bad_parameter("before", before, "a time in unix seconds (the next link)", now)
        try:
            search = parse_search(q)
        except BadSearch as exc:
            return bad_parameter("q", q or "", str(exc), now)
        filters = _Filters(event, conclusion, kind, float(before) if before else None, search)
        build = _backend_builder(f"{owner}/{repo}", filters, rollups)
        api = f"/api/crcr/{owner}/{repo}" + (f"?{request.url.query}" if request.url.query else "")
        return pages.html("backend.html.j2", "", api, build, not_found=_unknown_backend)

    @router.get("/api/crcr/{owner}/{repo}")
    def backend_json(
        owner: Annotated[str, Path(pattern=_NAME)],
        repo: Annotated[str, Path(pattern=_NAME)],
        event: Annotated[EventFilter | Literal[""] | None, Query()] = None,
        conclusion: Annotated[ConclusionFilter | Literal[""] | None, Query()] = None,
        kind: Annotated[KindFilter | Literal[""] | None, Query()] = None,
        before: Annotated[float | None, Query(ge=0)] = None,
        q: Annotated[str | None, Query(max_length=MAX_QUERY)] = None,
    ) -> Response:
        try:
            search = parse_search(q)
        except BadSearch as exc:
            return JSONResponse({"detail": f"q: {exc}"}, status_code=422, headers=SECURITY_HEADERS)
        filters = _Filters(event, conclusion, kind, before, search)
        build = _backend_builder(f"{owner}/{repo}", filters, rollups)
        return pages.json(build, not_found=_unknown_backend)

    return router


Builder = Callable[[Tx, float], dict[str, Any]]
log = logging.getLogger(__name__)


def _plain_view(router: APIRouter, pages: _Pages, path: str, name: str, build: Builder) -> None:
    """A view without parameters: `/{path}` renders `{name}.html.j2` (nav tab `name`),
    `/api/{path}` returns the same page as JSON."""

    @router.get(f"/{path}", response_class=HTMLResponse, name=f"{name}_html")
    def html() -> Response:
        return pages.html(f"{name}.html.j2", name, f"/api/{path}", build)

    @router.get(f"/api/{path}", name=f"{name}_json")
    def json() -> Response:
        return pages.json(build)


def _start_warmup(store: Store, rollups: Rollups, clock: Clock, recorder: LevelRecorder) -> None:
    """Record the allowlist's levels and keep the day cache filled in the background:
    at start (so the first visitor does not pay for reading a month of jobs), then
    every half TTL (so entries are renewed before they expire, even without traffic)."""

    def warm_forever() -> None:
        while True:
            _warm_once(store, rollups, clock, recorder)
            # Real time on purpose: a test's manual clock must not spin this loop.
            threading.Event().wait(rollups.ttl / 2)

    threading.Thread(target=warm_forever, name="dashboard-cache-warmup", daemon=True).start()


def _warm_once(store: Store, rollups: Rollups, clock: Clock, recorder: LevelRecorder) -> None:
    started = time.monotonic()
    recorder.maybe_record(clock.now())
    try:
        backends = rollups.warm(store, clock.now(), metrics.MAX_DAYS)
    except Exception:  # a loop boundary: a store closing under us must not crash anything
        log.debug("dashboard cache warm-up stopped", exc_info=True)
        return
    log.info("dashboard cache warm for %d backends in %.2f s", backends, time.monotonic() - started)


def _never(page: dict[str, Any]) -> str | None:
    return None


class _Pages:
    def __init__(
        self, store: Store, clock: Clock, refresh_seconds: int, recorder: LevelRecorder
    ) -> None:
        self.store = store
        self.clock = clock
        self.refresh_seconds = refresh_seconds
        self.recorder = recorder

    def _page(self, build: Builder, not_found: Callable[[dict[str, Any]], str | None]) -> Any:
        now = self.clock.now()
        self.recorder.maybe_record(now)
        with self.store.transaction(write=False) as tx:
            page = build(tx, now)
        missing = not_found(page)
        if missing:
            raise HTTPException(404, missing)
        return page

    def json(
        self, build: Builder, not_found: Callable[[dict[str, Any]], str | None] = _never
    ) -> Response:
        page = self._page(build, not_found)
        return JSONResponse(page, headers=SECURITY_HEADERS)

    def html(
        self,
        template: str,
        nav: str,
        api_url: str,
        build: Builder,
        extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        not_found: Callable[[dict[str, Any]], str | None] = _never,
    ) -> Response:
        try:
            page = self._page(build, not_found)
        except HTTPException as exc:
            return error_page(exc.status_code, "Not found", str(exc.detail), self.clock.now())
        context = extra(page) if extra else {}
        body = render(
            template,
            page,
            nav=nav,
            api_url=api_url,
            refresh_seconds=self.refresh_seconds,
            **context,
        )
        return HTMLResponse(body, headers=SECURITY_HEADERS)


def bad_parameter(name: str, value: str, allowed: str, now: float) -> Response:
    """HTML 400 for a query or path parameter a page cannot use (the JSON twins answer 422)."""
    shown = value if len(value) <= 60 else value[:60] + "…"
    message = f"{name}={shown!r} is not allowed: expected {allowed}."
    return error_page(400, "Bad request", message, now)


STORE_RETRY_AFTER_SECONDS = 10
_UNAVAILABLE = "The relay's store is unavailable right now; try again shortly."


def store_unavailable_page(now: float) -> Response:
    """503 page for a store outage (details are in the relay's log, not on the page); the
    app's StoreUnavailable handler answers with it for every dashboard page."""
    response = error_page(503, "Store unavailable", _UNAVAILABLE, now)
    response.headers["Retry-After"] = str(STORE_RETRY_AFTER_SECONDS)
    return response


def store_unavailable_json() -> Response:
    headers = {**SECURITY_HEADERS, "Retry-After": str(STORE_RETRY_AFTER_SECONDS)}
    body = {"error": "store unavailable", "detail": _UNAVAILABLE}
    return JSONResponse(body, status_code=503, headers=headers)


def _unknown_backend(page: dict[str, Any]) -> str | None:
    if page["known"]:
        return None
    return (
        f"No backend {page['repo']}: it is not in the allowlist and has reported no job. "
        "Check the spelling, or add it to the allowlist."
    )


@dataclass(frozen=True)
class _Filters:
    event: str | None
    conclusion: str | None
    kind: str | None
    before: float | None
    search: Search | None


def _is_time(text: str) -> bool:
    try:
        return 0 <= float(text) < 1e12
    except ValueError:
        return False


def _backend_builder(repo: str, f: _Filters, rollups: Rollups) -> Builder:
    def build(tx: Tx, now: float) -> dict[str, Any]:
        return grid.backend_page(
            tx, repo, now, f.event or None, f.conclusion or None, rollups,
            kind=f.kind or None, before=f.before, search=f.search,
        )  # fmt: skip

    return build


def _checked_sha(sha: str) -> str:
    if not _SHA.match(sha):
        raise HTTPException(
            400, f"commit {sha!r}: expected 7 to 40 lowercase hexadecimal characters"
        )
    return sha
