"""A fake external HUD: real HTTP on 127.0.0.1 playing ``POST /api/crcr/results``.

    with FakeHud(key="hud-key") as hud:
        relay config: extra.callbacks.hud_url = hud.url, hud_key = "hud-key"
        hud.down = True          # answer 503 to everything (an outage)
        hud.rows                 # {CRCR key: last body}, upserted like the real HUD
        hud.posts                # every accepted body, in arrival order
        hud.attempts             # every request, accepted or not
        hud.before_store = fn    # called with each accepted body before it is stored
                                 # (to make something happen while a write is in flight)

A wrong or missing ``x-hud-internal-bot`` key gets 401; a body without
``trusted.verified_repo`` or ``untrusted.callback_payload``, or whose workflow has
no ``job_name`` or no ``check_run_id``, gets 400 (as PyTorch's HUD,
pytorch/test-infra ``torchci/lib/crcr/crcrUtils.ts`` ``extractDynamoRecord``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.json_handler import JsonHandler


def crcr_key(body: dict[str, Any]) -> str:
    payload = body["untrusted"]["callback_payload"]
    workflow = payload.get("workflow") or {}
    parts = (
        body["trusted"]["verified_repo"],
        payload.get("delivery_id"),
        workflow.get("name"),
        workflow.get("job_name"),
        workflow.get("check_run_id"),
    )
    for field in ("job_name", "check_run_id"):
        if workflow.get(field) in (None, ""):
            raise KeyError(f"Missing required field: workflow.{field}")
    return "/".join("" if p is None else str(p) for p in parts)


class FakeHud:
    def __init__(self, key: str = "hud-key") -> None:
        self.key = key
        self.down = False
        self.rows: dict[str, dict[str, Any]] = {}
        self.posts: list[dict[str, Any]] = []
        self.attempts = 0
        self.before_store: Callable[[dict[str, Any]], None] | None = None
        self.lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def callback_settings(self, **more: Any) -> dict[str, Any]:
        """The relay's `extra.callbacks` that forward results here (plus `more`)."""
        return {"hud_url": self.url, "hud_key": self.key, **more}

    def __enter__(self) -> FakeHud:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _accept(self, headers: Any, raw: bytes) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.attempts += 1
            if self.down:
                return 503, {"error": "HUD is down"}
        if headers.get("x-hud-internal-bot") != self.key:
            return 401, {"error": "bad key"}
        try:
            body = json.loads(raw)
            key = crcr_key(body)
        except (ValueError, KeyError, TypeError) as error:
            return 400, {"error": f"bad record: {error}"}
        if self.before_store is not None:
            self.before_store(body)
        with self.lock:
            self.rows[key] = body
            self.posts.append(body)
        return 200, {"key": key}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hud = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path != "/api/crcr/results":
                    status, body = 404, {"error": "not found"}
                else:
                    status, body = hud._accept(self.headers, raw)
                self._json(status, body)

        return Handler
