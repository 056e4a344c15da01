"""Recording each downstream's level history in `repo_levels`, from the allowlist.

"At least a month at L2" needs to know since when a repository holds its level;
the allowlist only says what the level is now. The dashboard therefore appends
a row whenever the allowlist's level of a repository differs from its newest
recorded one (`unlisted` when it left the allowlist). A repository seen for the
first time is dated back to its first dispatch at that level still in the store.
Two relay processes recording at once only add a duplicate row, which the stint
computation (`queries.current_levels`) absorbs.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from relay.dashboard import queries
from relay.store.base import Store, Tx

UNLISTED = "unlisted"
MIN_INTERVAL_SECONDS = 60.0
log = logging.getLogger(__name__)


class LevelSource(Protocol):
    def __call__(self) -> dict[str, str]:
        """repo -> level ("L1".."L4") of every allowlisted repository."""
        ...


def level_changes(
    recorded: dict[str, tuple[str, float]], allowlisted: dict[str, str]
) -> list[tuple[str, str]]:
    """(repo, new level) for every repository whose level differs from the record (pure)."""
    changes = [
        (repo, level)
        for repo, level in sorted(allowlisted.items())
        if recorded.get(repo, ("",))[0] != level
    ]
    changes += [
        (repo, UNLISTED)
        for repo, (level, _) in sorted(recorded.items())
        if repo not in allowlisted and level != UNLISTED
    ]
    return changes


def record_levels(store: Store, allowlisted: dict[str, str], now: float) -> list[tuple[str, str]]:
    """Append the changes to `repo_levels`; return them. Writes only when something changed."""
    with store.transaction(write=False) as tx:
        if not level_changes(queries.current_levels(tx), allowlisted):
            return []
    with store.transaction() as tx:
        recorded = queries.current_levels(tx)
        changes = level_changes(recorded, allowlisted)
        for repo, level in changes:
            since = now if repo in recorded else _stint_start(tx, repo, level, now)
            tx.execute(
                "INSERT INTO repo_levels (repo, since, level) VALUES (?, ?, ?)"
                " ON CONFLICT (repo, since) DO NOTHING",
                (repo, since, level),
            )
    return changes


def _stint_start(tx: Tx, repo: str, level: str, now: float) -> float:
    """The first dispatch at `level` after the last dispatch at another level, else now."""
    other = tx.scalar(
        "SELECT MAX(dispatched_at) FROM dispatches WHERE repo = ? AND level <> ?", (repo, level)
    )
    first = tx.scalar(
        "SELECT MIN(dispatched_at) FROM dispatches WHERE repo = ? AND level = ?"
        " AND dispatched_at > ?",
        (repo, level, other if other is not None else 0.0),
    )
    return min(now, float(first)) if first is not None else now


class LevelRecorder:
    """Records at most once a minute; never lets a failure reach a page."""

    def __init__(self, store: Store, source: LevelSource | None) -> None:
        self._store = store
        self._source = source
        self._next = 0.0
        self._lock = threading.Lock()

    def maybe_record(self, now: float) -> None:
        if self._source is None:
            return
        with self._lock:
            if now < self._next:
                return
            self._next = now + MIN_INTERVAL_SECONDS
        try:
            changes = record_levels(self._store, self._source(), now)
        except Exception:  # an allowlist URL down or a busy store: try again next minute
            log.warning("could not record downstream levels", exc_info=True)
            return
        for repo, level in changes:
            log.info("level of %s is now %s", repo, level)
