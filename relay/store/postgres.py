"""PostgreSQL through psycopg 3: the scale-out store.

Several relay processes and workers on several machines share one database;
workers claim outbox rows with `SELECT ... FOR UPDATE SKIP LOCKED`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from relay.store.base import Params, Pool, Row, Store, Tx
from relay.store.errors import StoreUnavailable

_PLACEHOLDER = re.compile(r"\?")


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

    def _connect(self) -> Any:
        import psycopg
        from psycopg.rows import dict_row

        try:
            return psycopg.connect(
                self.url,
                autocommit=True,
                row_factory=dict_row,
                connect_timeout=max(1, int(self._connect_timeout)),
            )
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"cannot connect to PostgreSQL store: {exc}") from exc

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        import psycopg

        with self._pool.connection() as conn:
            try:
                with conn.transaction():
                    yield PostgresTx(conn)
            except psycopg.OperationalError as exc:
                raise StoreUnavailable(f"PostgreSQL store: {exc}") from exc

    def close(self) -> None:
        self._pool.close()
