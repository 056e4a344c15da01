"""A scripted loopback HTTP server: GitHub's ID-token endpoint and a callback sink.

The token endpoint follows GitHub Actions' protocol (bearer request token,
`audience` query parameter, `{"value": ...}`); the sink records every callback and
answers from a script, so that retries and refusals can be driven exactly. The
whole loop against the real relay is tested in tests/e2e/.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

REQUEST_TOKEN = "request-token-for-this-job"


@dataclass
class Loopback:
    base_url: str = ""
    script: list[tuple[int, dict[str, str], str]] = field(default_factory=list)
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # of every POST

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token?api-version=2.0"

    @property
    def callback_url(self) -> str:
        return f"{self.base_url}/github/callback"


def _handler(state: Loopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _answer(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def do_GET(self) -> None:
            query = parse_qs(urlsplit(self.path).query)
            if self.headers.get("Authorization") != f"bearer {REQUEST_TOKEN}":
                self._answer(401, '{"message": "bad request token"}')
                return
            audience = query.get("audience", [""])[0]
            self._answer(200, json.dumps({"value": f"jwt-for-{audience}"}))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            state.callbacks.append(json.loads(self.rfile.read(length)))
            state.authorizations.append(self.headers.get("Authorization", ""))
            state.paths.append(self.path)
            status, headers, body = state.script.pop(0) if state.script else (202, {}, "{}")
            self._answer(status, body, headers)

    return Handler


@contextmanager
def loopback_server() -> Iterator[Loopback]:
    state = Loopback()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
