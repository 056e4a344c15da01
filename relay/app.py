"""The relay's web application: `create_app(config) -> FastAPI`.

Other parts of the relay add endpoints by appending to `ROUTER_FACTORIES` a
"module:function" name; the function takes the `RelayState` and returns a
FastAPI `APIRouter`. Factories are imported lazily when an app is created, so a
module listed here is only imported by processes that serve HTTP.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.concurrency import run_in_threadpool

from relay.clock import SYSTEM_CLOCK, Clock
from relay.config import RelayConfig
from relay.state import AllowlistProvider, RelayState, build_state
from relay.store import Store, StoreUnavailable

RouterFactory = Callable[[RelayState], APIRouter]

ROUTER_FACTORIES: list[str] = [
    "relay.app:ops_router",
    "relay.webhook.endpoint:router",
    "relay.callbacks.endpoint:router",  # issue 7: /github/callback, /api/crcr/results
    "relay.dashboard.app:router",  # issue 8: /crcr pages, /api/crcr JSON, /selection/{id}
    "relay.local_target:issuer_router",  # issue 9: /local-oidc, the local target's OIDC issuer
]


def ops_router(state: RelayState) -> APIRouter:
    api = APIRouter()

    @api.get("/healthz")
    async def healthz() -> JSONResponse:
        try:
            await run_in_threadpool(state.store.ping)
        except StoreUnavailable as exc:
            state.store_outage.failed(exc)  # the reason goes to the log, not to the client
            return JSONResponse(
                {
                    "status": "unavailable",
                    "store": state.store.dialect,
                    "error": "store unavailable",
                },
                status_code=503,
                headers={"Retry-After": "10"},
            )
        state.store_outage.ok()
        return JSONResponse({"status": "ok", "store": state.store.dialect})

    @api.get("/metrics")
    async def metrics() -> Response:
        body = await run_in_threadpool(generate_latest, state.metrics.registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return api


# Paths whose answers are HTML pages (the dashboard's); every other route answers JSON.
HTML_PAGE_PREFIXES = ("/crcr", "/selection/")


def _load_factory(dotted: str) -> RouterFactory:
    module_name, _, attr = dotted.partition(":")
    factory: RouterFactory = getattr(importlib.import_module(module_name), attr)
    return factory


def create_app(
    config: RelayConfig,
    *,
    state: RelayState | None = None,
    store: Store | None = None,
    allowlist: AllowlistProvider | None = None,
    clock: Clock = SYSTEM_CLOCK,
    extra_routers: list[RouterFactory] | None = None,
) -> FastAPI:
    """Build the app; `app.state.relay` is the shared `RelayState`."""
    if state is None:
        state = build_state(config, store=store, allowlist=allowlist, clock=clock)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        state.close()

    app = FastAPI(title="spyre-ci relay", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.relay = state

    @app.exception_handler(StoreUnavailable)
    async def store_unavailable(request: Request, exc: StoreUnavailable) -> Response:
        """Every route's store outage: a 503 with Retry-After (an HTML page for the
        dashboard's pages); the reason goes to the log only, once per outage."""
        from relay.dashboard.routes import store_unavailable_json, store_unavailable_page

        state.store_outage.failed(exc)
        if request.url.path.startswith(HTML_PAGE_PREFIXES):
            return store_unavailable_page(state.clock.now())
        return store_unavailable_json()

    for factory in [*(_load_factory(d) for d in ROUTER_FACTORIES), *(extra_routers or [])]:
        app.include_router(factory(state))
    return app


def app_from_env() -> FastAPI:
    """Factory for `uvicorn --factory relay.app:app_from_env` (config from SPYRE_RELAY_*)."""
    from relay.config import load_config
    from relay.logs import configure_logging

    configure_logging()
    return create_app(load_config())
