"""Rate-limited logging of an outage (the store): one line when it starts, then one
every `every_seconds` while it lasts, and one when it ends; never a line per attempt."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable


class OutageLog:
    def __init__(
        self,
        logger: logging.Logger,
        what: str = "store",
        every_seconds: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._what = what
        self._every = every_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._started: float | None = None
        self._last_line = 0.0
        self._failures = 0

    def failed(self, error: BaseException) -> None:
        now = self._monotonic()
        with self._lock:
            self._failures += 1
            if self._started is None:
                self._started = self._last_line = now
                self._log.error("%s unavailable: %s", self._what, error)
            elif now - self._last_line >= self._every:
                self._last_line = now
                self._log.error(
                    "%s still unavailable after %.0f s (%d failed attempts): %s",
                    self._what,
                    now - self._started,
                    self._failures,
                    error,
                )

    def ok(self) -> None:
        if self._started is None:  # the common case, without the lock
            return
        with self._lock:
            if self._started is None:
                return
            self._log.warning(
                "%s available again after %.0f s (%d failed attempts)",
                self._what,
                self._monotonic() - self._started,
                self._failures,
            )
            self._started = None
            self._failures = 0
