"""`POST /github/webhook`: verify, then parse, route, store, answer (202 or 200 ignored)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from relay.allowlist_source import AllowlistUnavailable
from relay.json_body import BadBody
from relay.store import StoreUnavailable
from relay.webhook.ingest import StoredDelivery, ingest_async, parse_json_object
from relay.webhook.routing import BadPayload, event_label, route
from relay.webhook.signature import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    PayloadTooLarge,
    WebhookRejected,
    check_envelope,
    verify_signature,
)

if TYPE_CHECKING:
    from relay.state import RelayState

log = logging.getLogger("relay.webhook")


async def _read_body(request: Request, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"body exceeds {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect as exc:
        raise WebhookRejected("the client disconnected before sending the whole body") from exc
    return b"".join(chunks)


def _content_length(request: Request) -> int | None:
    value = request.headers.get("content-length")
    return int(value) if value and value.isdigit() else None


def router(state: RelayState) -> APIRouter:
    api = APIRouter()
    secrets = state.config.secret_bytes()
    limit = state.config.max_body_bytes

    async def github_webhook(request: Request) -> JSONResponse:
        started = time.perf_counter()
        headers = request.headers
        event = headers.get(EVENT_HEADER, "")
        delivery_id = headers.get(DELIVERY_HEADER, "")
        try:
            check_envelope(headers, _content_length(request), limit)
            body = await _read_body(request, limit)
            verify_signature(headers, body, secrets)
            payload = parse_json_object(body)
        except WebhookRejected as exc:
            state.metrics.deliveries.labels(event_label(event), f"rejected_{exc.status_code}").inc()
            log.warning(
                "webhook rejected: %s",
                exc,
                extra={"delivery_id": delivery_id or None, "status": exc.status_code},
            )
            return JSONResponse({"error": str(exc)}, status_code=exc.status_code)
        except BadBody as exc:
            state.metrics.deliveries.labels(event_label(event), "rejected_400").inc()
            log.warning(
                "webhook rejected: %s", exc, extra={"delivery_id": delivery_id, "status": 400}
            )
            return JSONResponse({"error": str(exc)}, status_code=400)

        try:
            decision = route(event, payload, state.config.upstream_repo)
        except BadPayload as exc:
            state.metrics.deliveries.labels(event_label(event), "rejected_400").inc()
            log.warning(
                "webhook rejected: %s", exc, extra={"delivery_id": delivery_id, "status": 400}
            )
            return JSONResponse({"error": str(exc)}, status_code=400)
        if not decision.upstream:
            state.metrics.deliveries.labels(event_label(event), "ignored").inc()
            log.debug(
                "ignored: %s", decision.reason, extra={"delivery_id": delivery_id, "event": event}
            )
            return JSONResponse({"ignored": True, "reason": decision.reason}, status_code=200)

        delivery = StoredDelivery(delivery_id, event, payload, body, state.clock.now())
        try:
            result = await ingest_async(state, delivery, decision)
        except AllowlistUnavailable:
            state.metrics.deliveries.labels(event, "unavailable").inc()
            # The reason is logged once by the allowlist source, not per webhook.
            log.info(
                "webhook not stored: allowlist unavailable",
                extra={"delivery_id": delivery_id, "event": event},
            )
            return JSONResponse(
                {"error": "relay allowlist unavailable, retry later"}, status_code=503
            )
        except StoreUnavailable as exc:
            state.metrics.deliveries.labels(event, "unavailable").inc()
            state.store_outage.failed(exc)
            log.info("webhook not stored: store unavailable", extra={"delivery_id": delivery_id})
            return JSONResponse({"error": "relay store unavailable, retry later"}, status_code=503)
        state.store_outage.ok()
        state.metrics.ingest_latency.observe(time.perf_counter() - started)
        outcome = "duplicate" if result.duplicate else decision.kind
        state.metrics.deliveries.labels(event, outcome).inc()
        log.info(
            "webhook %s: %s, %d job(s)",
            outcome,
            decision.reason,
            result.enqueued,
            extra={"delivery_id": delivery_id, "event": event, "route": decision.kind},
        )
        if decision.ignored:
            return JSONResponse({"ignored": True, "reason": decision.reason}, status_code=200)
        return JSONResponse(
            {
                "delivery_id": delivery_id,
                "route": decision.kind,
                "duplicate": result.duplicate,
                "enqueued": result.enqueued,
            },
            status_code=202,
        )

    # A plain Starlette route: the handler reads the raw body itself, so FastAPI's
    # parameter machinery would only cost time on the hottest path.
    api.add_route("/github/webhook", github_webhook, methods=["POST"], include_in_schema=False)
    return api
