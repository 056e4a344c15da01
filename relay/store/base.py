"""The dialect-neutral store API: a `Store` hands out `Tx` transactions.

SQL is written once, with `?` placeholders; the PostgreSQL store rewrites them
to psycopg's `%s`. Write SQL that both SQLite (>= 3.35) and PostgreSQL accept:
`INSERT ... ON CONFLICT (...) DO NOTHING/UPDATE`, `RETURNING`, no `?` or `%`
inside string literals (pass values as parameters instead).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

Row = dict[str, Any]
Params = Sequence[Any]

C = TypeVar("C")
T = TypeVar("T")


class Tx(ABC):
    """One open transaction. Commits when its `with` block ends, rolls back on error."""

    dialect: str

    @abstractmethod
    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return the number of rows it changed."""

    @abstractmethod
    def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run a query; return its rows as dicts keyed by column name."""

    def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        rows = self.fetchall(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Params = ()) -> Any:
        row = self.fetchone(sql, params)
        return None if row is None else next(iter(row.values()))

    @property
    def skip_locked(self) -> str:
        """Suffix for a claiming SELECT: `FOR UPDATE SKIP LOCKED` on PostgreSQL.

        SQLite needs none: its write transactions (`BEGIN IMMEDIATE`) already
        exclude every other writer.
        """
        return " FOR UPDATE SKIP LOCKED" if self.dialect == "postgres" else ""


class Store(ABC):
    """A database holding the relay's tables. Thread-safe; one per process."""

    dialect: str
    url: str

    @abstractmethod
    def transaction(self, *, write: bool = True) -> Any:
        """Context manager yielding a `Tx`. `write=False` for read-only work."""

    @abstractmethod
    def close(self) -> None: ...

    def run_write(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn(tx)` in a write transaction and return its result once committed.

        Stores may commit several such writes together (SQLite: group commit),
        so `fn` must only touch the database through `tx` and may run in another
        thread. Use it for many small, independent writes (webhook ingest).
        """
        with self.transaction() as tx:
            result: T = fn(tx)
        return result

    async def run_write_async(self, fn: Callable[[Tx], T]) -> T:
        """`run_write` for async code (a worker thread by default)."""
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(self.run_write, fn)

    def ping(self) -> None:
        """Raise `StoreUnavailable` unless the database answers a query."""
        with self.transaction(write=False) as tx:
            tx.scalar("SELECT 1")

    def migrate(self) -> list[int]:
        """Apply pending migrations; return the versions applied."""
        from relay.store.migrate import apply_migrations

        return apply_migrations(self)


class Pool(Generic[C]):
    """A minimal connection pool: reuse idle connections, open more on demand."""

    def __init__(
        self,
        connect: Callable[[], C],
        close: Callable[[C], None],
        max_idle: int = 8,
        reusable: Callable[[C], bool] = lambda conn: False,
    ) -> None:
        """`reusable(conn)` says whether a connection whose user raised is still fit
        (e.g. its transaction was rolled back cleanly); by default it is discarded."""
        self._connect = connect
        self._close = close
        self._reusable = reusable
        self._idle: queue.LifoQueue[C] = queue.LifoQueue(maxsize=max_idle)
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[C]:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._connect()
        broken = True
        try:
            yield conn
            broken = False
        except BaseException:
            broken = not self._safe_reusable(conn)
            raise
        finally:
            self._release(conn, broken)

    def _safe_reusable(self, conn: C) -> bool:
        try:
            return self._reusable(conn)
        except Exception:
            return False

    def _release(self, conn: C, broken: bool) -> None:
        if broken or self._closed:
            self._safe_close(conn)
            return
        try:
            self._idle.put_nowait(conn)
        except queue.Full:
            self._safe_close(conn)

    def _safe_close(self, conn: C) -> None:
        # A broken connection may fail to close; there is nothing to recover.
        with contextlib.suppress(Exception):
            self._close(conn)

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._safe_close(self._idle.get_nowait())
            except queue.Empty:
                return
