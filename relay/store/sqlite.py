"""SQLite in WAL mode: the embedded default (one file, no service).

Every write transaction is `BEGIN IMMEDIATE`, so writers queue on the file lock
(up to the busy timeout) instead of failing on a lock upgrade; readers never
block writers thanks to WAL. Several processes (web server, workers) may share
the file on one machine.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from relay.store.base import Params, Pool, Row, Store, T, Tx
from relay.store.errors import StoreUnavailable
from relay.store.group_commit import GroupCommitter

CHECKPOINT_INTERVAL_SECONDS = 0.5


class SqliteTx(Tx):
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._conn.execute(sql, tuple(params)).rowcount

    def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        cursor = self._conn.execute(sql, tuple(params))
        names = [d[0] for d in cursor.description or ()]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class SqliteStore(Store):
    dialect = "sqlite"

    def __init__(self, path: Path, *, busy_timeout: float = 5.0, synchronous: str = "FULL") -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._pool: Pool[sqlite3.Connection] = Pool(
            self._connect, lambda c: c.close(), reusable=lambda c: not c.in_transaction
        )
        # Threads of this process queue here rather than in SQLite's busy handler,
        # which sleeps in growing steps and would add tens of ms to waiting writers.
        self._write_lock = threading.Lock()
        self._group = GroupCommitter(self)
        self._closed = threading.Event()
        self._checkpointer: threading.Thread | None = None

    def _connect(self) -> sqlite3.Connection:
        try:
            if not self.path.parent.is_dir():
                raise StoreUnavailable(f"SQLite store directory {self.path.parent} does not exist")
            conn = sqlite3.connect(
                self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            # Checkpoints run in a background thread (see _checkpoint_loop), not in the
            # commit of whichever webhook happens to cross the threshold; this large
            # automatic threshold is only a safety net for processes without it.
            conn.execute("PRAGMA wal_autocheckpoint=20000")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open SQLite store {self.path}: {exc}") from exc
        return conn

    def _start_checkpointer(self) -> None:
        if self._checkpointer is None:
            self._checkpointer = threading.Thread(
                target=self._checkpoint_loop, name="sqlite-checkpoint", daemon=True
            )
            self._checkpointer.start()

    def _checkpoint_loop(self) -> None:
        """Copy the WAL into the database every half second without blocking writers."""
        while not self._closed.wait(CHECKPOINT_INTERVAL_SECONDS):
            try:
                with self._pool.connection() as conn:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except (sqlite3.Error, StoreUnavailable):
                continue  # the next round tries again

    def run_write(self, fn: Callable[[Tx], T]) -> T:
        return self._group.submit(fn)

    async def run_write_async(self, fn: Callable[[Tx], T]) -> T:
        return await self._group.submit_async(fn)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        if not write:
            with self._transaction(write=False) as tx:
                yield tx
            return
        self._start_checkpointer()
        if not self._write_lock.acquire(timeout=self._busy_timeout):
            raise StoreUnavailable(
                f"SQLite store {self.path}: no write turn in {self._busy_timeout} s"
            )
        try:
            with self._transaction(write=True) as tx:
                yield tx
        finally:
            self._write_lock.release()

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Tx]:
        with self._pool.connection() as conn:
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as exc:
                raise StoreUnavailable(f"SQLite store {self.path}: {exc}") from exc
            try:
                yield SqliteTx(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                conn.execute("ROLLBACK")
                raise StoreUnavailable(f"SQLite store {self.path}: commit failed: {exc}") from exc

    def close(self) -> None:
        self._closed.set()
        self._group.close()
        self._pool.close()
