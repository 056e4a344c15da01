"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 (real HTTP, free port).

Enforces what the agent relies on: `POST /v1/chat/completions` only, a JSON body with a known
`model` (404 otherwise, like vLLM) and `messages`, the bearer key when one is configured (401),
and answers `choices[0].message.content` plus `usage.total_tokens`. `decide` turns the
groups of a request into the content; `fault` makes the next requests fail in a chosen way.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Decide = Callable[[list[dict[str, Any]]], str]


def decide_all(decision: str, rationale: str, confidence: float, **more: Any) -> Decide:
    """An agent answer giving every group of the request the same decision."""

    def decide(groups: list[dict[str, Any]]) -> str:
        decisions = [
            {
                "group_id": g["group_id"],
                "decision": decision,
                "rationale": rationale,
                "confidence": confidence,
                **more,
            }
            for g in groups
        ]
        return json.dumps({"decisions": decisions})

    return decide


run_all = decide_all("run", "may break", 0.9, priority=0.8)


@dataclass
class FakeOpenAI:
    model: str = "triage-model"
    api_key: str | None = None
    decide: Decide = run_all
    fault: str | None = None  # "500", "sleep", "not-json", "no-choices"
    sleep_seconds: float = 2.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body).encode() if not isinstance(body, bytes) else body
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(401, {"error": {"message": "invalid api key"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                if body.get("model") != fake.model:
                    self._send(
                        404, {"error": {"message": f"model {body.get('model')!r} not found"}}
                    )
                    return
                messages = body.get("messages") or []
                if [m.get("role") for m in messages] != ["system", "user"]:
                    self._send(400, {"error": {"message": "expected a system and a user message"}})
                    return
                if fake.fault == "500":
                    self._send(500, {"error": {"message": "engine crashed"}})
                    return
                if fake.fault == "sleep":
                    time.sleep(fake.sleep_seconds)
                groups = json.loads(messages[1]["content"])["groups"]
                content = "I think so!" if fake.fault == "not-json" else fake.decide(groups)
                if fake.fault == "no-choices":
                    self._send(200, {"id": "x", "choices": []})
                    return
                self._send(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "model": fake.model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": 100,
                            "completion_tokens": 20,
                            "total_tokens": 120,
                        },
                    },
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
