"""SQLite in WAL mode: the embedded default (one file, no service).

Every write transaction is `BEGIN IMMEDIATE`, so writers queue on the file lock
(up to the busy timeout) instead of failing on a lock upgrade; readers never
block writers thanks to WAL. Several processes (web server, workers) may share
the file on one machine.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from relay.store.base import Params, Pool, Row, Store, Tx
from relay.store.errors import StoreUnavailable


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
        self._pool: Pool[sqlite3.Connection] = Pool(self._connect, lambda c: c.close())

    def _connect(self) -> sqlite3.Connection:
        try:
            if not self.path.parent.is_dir():
                raise StoreUnavailable(f"SQLite store directory {self.path.parent} does not exist")
            conn = sqlite3.connect(
                self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open SQLite store {self.path}: {exc}") from exc
        return conn

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
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
        self._pool.close()
