"""Extra `client_payload` keys added at dispatch time by other parts of the relay.

Each entry of `PAYLOAD_EXTENSIONS` names a function `(state, request) -> PayloadExtension`,
called once per dispatch attempt, before sending. Its `extra` keys are merged into
client_payload (mind GitHub's 10-key limit: the base has 3 keys, slimming adds 1),
its `callback_token_id` is recorded in the `dispatches` row when the send succeeds.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.dispatch.dispatcher import DispatchRequest
    from relay.state import RelayState


@dataclass(frozen=True)
class PayloadExtension:
    extra: dict[str, Any] = field(default_factory=dict)
    callback_token_id: str | None = None


PAYLOAD_EXTENSIONS: list[str] = [
    "relay.callbacks.tokens:payload_extension",  # issue 7: client_payload.callback_token
]


def apply_extensions(state: RelayState, request: DispatchRequest) -> PayloadExtension:
    extra: dict[str, Any] = {}
    token_id: str | None = None
    for dotted in PAYLOAD_EXTENSIONS:
        module_name, _, attr = dotted.partition(":")
        result: PayloadExtension = getattr(importlib.import_module(module_name), attr)(
            state, request
        )
        extra.update(result.extra)
        token_id = result.callback_token_id or token_id
    return PayloadExtension(extra, token_id)
