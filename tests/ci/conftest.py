"""Shared fixtures for the `spyre-ci ci` tests: the real recorded webhook payloads."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.relay_server import FIXTURES  # $SPYRE_CI_WEBHOOK_FIXTURES or tests/fixtures/...


def load_webhook(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.payload.json").read_text())
    return data


def dispatch_event(
    event_type: str, payload: dict[str, Any], delivery_id: str = "d-1"
) -> dict[str, Any]:
    """The `repository_dispatch` event JSON a workflow sees for a relay dispatch."""
    return {
        "action": event_type,
        "client_payload": {
            "event_type": event_type,
            "delivery_id": delivery_id,
            "payload": copy.deepcopy(payload),
            "callback_token": "cbt-opaque",
        },
        "repository": {"full_name": "ibm/torch-spyre"},
    }


@pytest.fixture
def webhook() -> Callable[[str], dict[str, Any]]:
    if not FIXTURES.is_dir():
        pytest.fail(f"the recorded webhook payloads are missing: {FIXTURES}")
    return load_webhook
