"""Serving test doubles and in-process apps on loopback: a free port, and an ASGI app on a
real uvicorn server in a daemon thread of the test process."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class UvicornThread:
    """`app` on http://127.0.0.1:`port`, served by uvicorn in a thread until `stop()`."""

    def __init__(self, app: Any, port: int, name: str, **config: Any) -> None:
        self.name = name
        settings = {"log_level": "warning", "access_log": False, **config}
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **settings))
        self.thread = threading.Thread(target=self.server.run, name=name, daemon=True)

    def start(self, timeout: float = 10.0) -> UvicornThread:
        """Return once uvicorn listens; RuntimeError if it dies or is not up in `timeout` s."""
        self.thread.start()
        deadline = time.time() + timeout
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
