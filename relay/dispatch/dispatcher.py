"""The `Dispatcher` role (Zuul-style): how a dispatch job reaches one kind of target.

A dispatcher gets a `DispatchRequest` and either returns (sent) or raises
`RetryableError` / `PermanentError` (relay.jobs). It must be idempotent enough
for at-least-once delivery: a job may be sent again after a crash, with the
same `delivery_id` and target, so the downstream can drop duplicates.

Register a new connection in `DISPATCHER_FACTORIES` (name -> "module:function",
the function taking the `RelayState` and returning a Dispatcher); a target
configured with `connection: <name>` (config `targets`) then uses it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from relay.state import RelayState


@dataclass(frozen=True)
class DispatchRequest:
    delivery_id: str
    target: str  # "owner/repo" for GitHub; the target name otherwise
    event_type: str  # the GitHub event name (pull_request, push, ...)
    payload: dict[str, Any]  # the webhook JSON, unchanged
    level: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the target's configured options
    extra: dict[str, Any] = field(default_factory=dict)  # extra client_payload keys


class Dispatcher(Protocol):
    def dispatch(self, request: DispatchRequest) -> None: ...


DISPATCHER_FACTORIES: dict[str, str] = {
    "github": "relay.dispatch.github:make_dispatcher",
    "local": "relay.local_target:make_dispatcher",  # issue 9: the built-in local target
}


def load_dispatcher(connection: str, state: RelayState) -> Dispatcher:
    if connection not in DISPATCHER_FACTORIES:
        raise KeyError(f"no dispatcher registered for connection {connection!r}")
    module_name, _, attr = DISPATCHER_FACTORIES[connection].partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    dispatcher: Dispatcher = factory(state)
    return dispatcher
