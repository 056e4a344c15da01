"""Load the allowlist from a file or an http(s) URL, cached, refreshed at most
every `min_refresh_seconds`. A refresh that fails keeps the last good allowlist."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import httpx

from relay.allowlist import Allowlist, AllowlistError, parse_allowlist
from relay.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)


class AllowlistUnavailable(Exception):
    """No allowlist could be loaded yet (the message names the source and the reason)."""


class AllowlistSource:
    def __init__(
        self, source: str, *, min_refresh_seconds: float = 60.0, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.source = source
        self.min_refresh_seconds = min_refresh_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._current: Allowlist | None = None
        self._checked_at: float | None = None
        self._etag: str | None = None
        self._mtime: float | None = None
        self._error: str | None = None

    def load(self) -> Allowlist:
        """Read the allowlist now (at start): `AllowlistUnavailable` says why it cannot
        be used, naming the source and, for a parse error, the line."""
        return self.current(force=True)

    @property
    def is_url(self) -> bool:
        return self.source.startswith(("http://", "https://"))

    def refresh_due(self) -> bool:
        """True when the next `current()` call will read the file or the URL."""
        checked = self._checked_at
        return checked is None or self._clock.now() - checked >= self.min_refresh_seconds

    def current(self, *, force: bool = False) -> Allowlist:
        """The allowlist, reloaded if the refresh interval has passed (or `force`)."""
        with self._lock:
            now = self._clock.now()
            due = self._checked_at is None or now - self._checked_at >= self.min_refresh_seconds
            if force or due:
                self._checked_at = now
                self._refresh()
            return self._available()

    def _available(self) -> Allowlist:
        if self._current is None:
            raise AllowlistUnavailable(
                f"allowlist {self.source} could not be loaded: {self._error or 'unknown error'}"
            )
        return self._current

    def _refresh(self) -> None:
        try:
            text = self._fetch_url() if self.is_url else self._read_file()
            if text is not None:
                self._current = parse_allowlist(text, self.source)
                self._error = None
        except (OSError, httpx.HTTPError, AllowlistError) as exc:
            reason = str(exc) or type(exc).__name__
            if self._current is None:
                self._error = reason
                log.error("allowlist %s could not be loaded: %s", self.source, reason)
                return
            if reason != self._error:  # once per distinct failure, not every refresh
                log.error(
                    "allowlist %s refresh failed, keeping the last good one: %s",
                    self.source,
                    reason,
                )
            self._error = reason

    def _read_file(self) -> str | None:
        path = Path(self.source)
        mtime = path.stat().st_mtime
        if self._current is not None and mtime == self._mtime:
            return None
        self._mtime = mtime
        return path.read_text(encoding="utf-8")

    def _fetch_url(self) -> str | None:
        headers = {"If-None-Match": self._etag} if self._etag and self._current else {}
        response = httpx.get(self.source, headers=headers, timeout=10.0, follow_redirects=True)
        if response.status_code == 304:
            return None
        response.raise_for_status()
        self._etag = response.headers.get("etag")
        return response.text


class StaticAllowlist:
    """An allowlist given in code (tests, or a relay configured with `targets` only)."""

    def __init__(self, allowlist: Allowlist) -> None:
        self._allowlist = allowlist

    def current(self) -> Allowlist:
        return self._allowlist
