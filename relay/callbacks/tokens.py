"""Issue a callback token with every dispatch (a ``PAYLOAD_EXTENSIONS`` entry).

The token id is derived from the binding, so the retries of one dispatch (the
outbox is at-least-once) all carry tokens with the same id: a downstream run
started by an attempt whose answer we never saw can still report.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING

from relay.callback_token import TokenBinding
from relay.callbacks.settings import callback_settings, token_secret
from relay.dispatch.extensions import PayloadExtension
from relay.webhook.routing import route

if TYPE_CHECKING:
    from relay.dispatch.dispatcher import DispatchRequest
    from relay.state import RelayState


def binding_for(request: DispatchRequest, upstream_repo: str) -> TokenBinding:
    """The same PR number and head SHA as ingest records for the delivery."""
    facts = route(request.event_type, request.payload, upstream_repo)
    return TokenBinding(request.delivery_id, request.target, facts.pr_number, facts.head_sha)


def payload_extension(state: RelayState, request: DispatchRequest) -> PayloadExtension:
    from relay.callbacks.service import make_signer

    settings = callback_settings(state.config.extra)
    binding = binding_for(request, state.config.upstream_repo)
    secret = token_secret(settings, state.config.secret_bytes()[0])
    token_id = hmac.new(secret, b"id\x1f" + binding.canonical(), hashlib.sha256).hexdigest()[:24]
    issued = make_signer(state, settings).issue(binding, state.clock.now(), token_id=token_id)
    return PayloadExtension({"callback_token": issued.token}, issued.token_id)
