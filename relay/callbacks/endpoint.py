"""HTTP endpoints of part 2: ``POST /github/callback``, ``POST /github/claim`` and
``POST /api/crcr/results``.

Listed in ``relay.app.ROUTER_FACTORIES`` as ``relay.callbacks.endpoint:router``.
The handlers only move bytes: the decisions are in ``service`` and ``hud_api``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from prometheus_client import Counter
from starlette.concurrency import run_in_threadpool

from relay.callbacks.answer import Answer
from relay.callbacks.claims import ClaimService
from relay.callbacks.hud_api import HudReceiver
from relay.callbacks.service import CallbackService

if TYPE_CHECKING:
    from relay.state import RelayState

# A callback is small; a selection report's HTML may take up to 2 MiB of it.
MAX_CALLBACK_BYTES = 4 * 1024 * 1024


async def _read_limited(request: Request, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _respond(answer: Answer) -> JSONResponse:
    return JSONResponse(answer.body, status_code=answer.status_code, headers=answer.headers)


def router(state: RelayState) -> APIRouter:
    api = APIRouter()
    callbacks = CallbackService(state)
    claims = ClaimService(state, callbacks)
    hud = HudReceiver(state)
    answered = Counter(
        "relay_callbacks",
        "Callbacks and HUD rows received, by endpoint and HTTP status",
        ["endpoint", "status"],
        registry=state.metrics.registry,
    )

    async def serve(
        request: Request, endpoint: str, handle: Callable[[bytes], Answer]
    ) -> JSONResponse:
        raw = await _read_limited(request, MAX_CALLBACK_BYTES)
        if raw is None:
            return JSONResponse({"error": f"body exceeds {MAX_CALLBACK_BYTES} bytes"}, 413)
        answer = await run_in_threadpool(handle, raw)  # a store outage: the app's 503
        answered.labels(endpoint, str(answer.status_code)).inc()
        return _respond(answer)

    @api.post("/github/callback")
    async def github_callback(request: Request) -> JSONResponse:
        authorization = request.headers.get("authorization")
        return await serve(request, "callback", lambda raw: callbacks.handle(authorization, raw))

    @api.post("/github/claim")
    async def github_claim(request: Request) -> JSONResponse:
        authorization = request.headers.get("authorization")
        return await serve(request, "claim", lambda raw: claims.handle(authorization, raw))

    @api.post("/api/crcr/results")
    async def crcr_results(request: Request) -> JSONResponse:
        return await serve(request, "hud", lambda raw: hud.handle(request.headers, raw))

    return api
