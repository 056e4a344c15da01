"""Dispatch through GitHub's `repository_dispatch` (CRCR's wire format)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay.dispatch.dispatcher import DispatchRequest
from relay.dispatch.payload import PayloadTooLargeForGitHub, build_client_payload
from relay.github.client import GitHubClient
from relay.jobs import PermanentError

if TYPE_CHECKING:
    from relay.state import RelayState


class GitHubDispatcher:
    def __init__(self, client: GitHubClient) -> None:
        self.client = client

    def dispatch(self, request: DispatchRequest) -> None:
        try:
            client_payload = build_client_payload(
                request.event_type, request.delivery_id, request.payload, **request.extra
            )
        except PayloadTooLargeForGitHub as exc:
            raise PermanentError(f"{request.target}: {exc}") from exc
        self.client.request(
            "POST",
            f"/repos/{request.target}/dispatches",
            repo=request.target,
            json={"event_type": request.event_type, "client_payload": client_payload},
        )


def make_dispatcher(state: RelayState) -> GitHubDispatcher:
    return GitHubDispatcher(state.github())
