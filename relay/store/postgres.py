"""PostgreSQL through psycopg 3: the scale-out store.

Several relay processes and workers on several machines share one database;
workers claim outbox rows with `SELECT ... FOR UPDATE SKIP LOCKED`.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from relay.store.base import Params, Pool, Row, Store, Tx
from relay.store.errors import StoreUnavailable

_PLACEHOLDER = re.compile(r"\?")

# A statement may run this many times the store timeout before the server cancels it
# (`statement_timeout`); dashboard pages and pruning stay far below it.
_STATEMENT_TIMEOUT_FACTOR = 12


def to_psycopg_sql(sql: str) -> str:
    """Rewrite `?` placeholders to `%s` (and escape literal `%`)."""
    return _PLACEHOLDER.sub("%s", sql.replace("%", "%%"))


def _idle_and_sound(conn: Any) -> bool:
    """A connection whose transaction ended cleanly (e.g. a rolled-back 400) is reused."""
    from psycopg.pq import TransactionStatus

    return bool(
        not conn.closed
        and not conn.broken
        and conn.info.transaction_status == TransactionStatus.IDLE
    )


def _shutdown_socket(conn: Any) -> None:
    """Cut a connection's socket so that a thread blocked reading it gets an error now."""
    with contextlib.suppress(Exception):
        fd = os.dup(conn.pgconn.socket)
        sock = socket.socket(fileno=fd)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


class _Watchdog:
    """Bounds every round trip to the server on the client side.

    `statement_timeout` and TCP keepalives do not help when the server is alive for the
    kernel but does not answer (a stopped or swamped postmaster: the kernel still
    acknowledges every packet). An operation still waiting after `timeout` seconds makes
    the watchdog probe the server with a new connection (bounded by `connect_timeout`);
    if that fails too, the waiting connections' sockets are shut down, so their callers
    get `StoreUnavailable` instead of hanging. A slow but answering server keeps its
    long statements (up to the server's `statement_timeout`).
    """

    def __init__(self, store: PostgresStore, timeout: float) -> None:
        self._store = store
        self._timeout = timeout
        self._lock = threading.Lock()
        self._busy: dict[int, tuple[Any, float, float]] = {}  # id -> conn, start, limit
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    @contextmanager
    def guard(self, conn: Any, *, limit: float | None = None) -> Iterator[None]:
        """Watch `conn` while the block runs; `limit` cuts it after so many seconds
        without probing (health checks)."""
        key = id(conn)
        with self._lock:
            self._busy[key] = (conn, time.monotonic(), limit if limit is not None else -1.0)
            self._start()
        try:
            yield
        finally:
            with self._lock:
                self._busy.pop(key, None)

    def _start(self) -> None:
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name="postgres-watchdog", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        step = min(0.5, self._timeout / 4)
        last_probe_ok = 0.0
        while not self._closed:
            self._wake.wait(step)
            now = time.monotonic()
            with self._lock:
                busy = list(self._busy.values())
            cut = [(c, start) for c, start, limit in busy if 0 <= limit <= now - start]
            stuck = [
                (c, start) for c, start, limit in busy if limit < 0 and now - start >= self._timeout
            ]
            if stuck and now - last_probe_ok >= self._timeout:
                if self._store.probe():
                    last_probe_ok = time.monotonic()
                else:
                    cut += stuck
            for conn, start in cut:
                with self._lock:
                    entry = self._busy.get(id(conn))
                    # Only the operation seen stuck: the connection may have moved on.
                    if entry is not None and entry[0] is conn and entry[1] == start:
                        _shutdown_socket(conn)

    def close(self) -> None:
        self._closed = True
        self._wake.set()


class PostgresTx(Tx):
    dialect = "postgres"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Params = ()) -> int:
        with self._conn.cursor() as cursor:
            cursor.execute(to_psycopg_sql(sql), tuple(params))
            return int(cursor.rowcount)

    def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        with self._conn.cursor() as cursor:
            cursor.execute(to_psycopg_sql(sql), tuple(params))
            return list(cursor.fetchall())


class PostgresStore(Store):
    dialect = "postgres"

    def __init__(self, url: str, *, connect_timeout: float = 5.0) -> None:
        self.url = url
        self._connect_timeout = connect_timeout
        # Keep as many idle connections as the web server has worker threads (anyio's
        # default: 40): reconnecting costs more than a webhook's whole transaction.
        # No group commit here (unlike SQLite): PostgreSQL already shares WAL flushes
        # between concurrent commits, and measured faster with one transaction per webhook.
        self._pool: Pool[Any] = Pool(
            self._connect, lambda c: c.close(), max_idle=40, reusable=_idle_and_sound
        )
        timeout = max(1.0, float(connect_timeout))
        self.statement_timeout = timeout * _STATEMENT_TIMEOUT_FACTOR
        self._watchdog = _Watchdog(self, timeout)

    def _connect_kwargs(self) -> dict[str, Any]:
        """Bounded waits on every connection: connecting, a silent peer (keepalives,
        unacknowledged data), slow statements and lock waits (server side)."""
        timeout = max(1, int(self._connect_timeout))
        return {
            "connect_timeout": timeout,
            "keepalives": 1,
            "keepalives_idle": timeout,
            "keepalives_interval": max(1, timeout // 3),
            "keepalives_count": 3,
            "tcp_user_timeout": int(timeout * 2000),
            "options": (
                f"-c statement_timeout={int(self.statement_timeout * 1000)}"
                f" -c lock_timeout={int(self._connect_timeout * 1000)}"
                f" -c idle_in_transaction_session_timeout={int(self.statement_timeout * 1000)}"
            ),
        }

    def _connect(self) -> Any:
        import psycopg
        from psycopg.rows import dict_row

        try:
            return psycopg.connect(
                self.url, autocommit=True, row_factory=dict_row, **self._connect_kwargs()
            )
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"cannot connect to the PostgreSQL store: {exc}") from exc

    def probe(self) -> bool:
        """Whether the server completes a new connection within the connect timeout."""
        try:
            self._connect().close()
        except StoreUnavailable:
            return False
        return True

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        import psycopg

        with self._pool.connection() as conn:
            try:
                # Watched for the whole transaction: the watchdog cuts a connection only
                # when a probe shows the server itself is not answering, so time spent in
                # our own code between statements never gets it cut.
                with self._watchdog.guard(conn), conn.transaction():
                    yield PostgresTx(conn)
            except psycopg.OperationalError as exc:
                raise StoreUnavailable(f"PostgreSQL store: {exc}") from exc

    def ping(self) -> None:
        """`SELECT 1` on a pooled connection, cut after the store timeout (health checks)."""
        import psycopg

        with self._pool.connection() as conn:
            try:
                with self._watchdog.guard(conn, limit=self._connect_timeout):
                    conn.execute("SELECT 1")
            except psycopg.OperationalError as exc:
                raise StoreUnavailable(f"PostgreSQL store ping: {exc}") from exc

    def close(self) -> None:
        self._watchdog.close()
        self._pool.close()
