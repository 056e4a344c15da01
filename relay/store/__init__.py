"""The relay store: one schema for SQLite (WAL, default) and PostgreSQL.

Usage (see docs/relay.md):

    store = open_store("sqlite:///var/relay.db")   # or "postgresql://user@host:5432/db"
    store.migrate()
    with store.transaction() as tx:                # commits at the end, rolls back on error
        tx.execute("INSERT INTO hud_rows (key, ...) VALUES (?, ...)", (...))
        rows = tx.fetchall("SELECT * FROM job_runs WHERE repo = ?", ("org/repo",))
"""

from __future__ import annotations

from pathlib import Path

from relay.store.base import Params, Row, Store, Tx
from relay.store.errors import BadStoreURL, MigrationError, StoreError, StoreUnavailable

__all__ = [
    "BadStoreURL",
    "MigrationError",
    "Params",
    "Row",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Tx",
    "open_store",
]


def open_store(url: str, *, busy_timeout: float = 5.0, sqlite_synchronous: str = "FULL") -> Store:
    """Open the store named by `url`: `sqlite:///relative/or/absolute/path.db`,
    `sqlite:////abs/path.db`, or `postgresql://...` / `postgres://...`."""
    if url.startswith("sqlite:///"):
        from relay.store.sqlite import SqliteStore

        path = url[len("sqlite:///") :]
        if not path:
            raise BadStoreURL(f"store URL {url!r} names no file")
        return SqliteStore(
            Path(path).expanduser().absolute(),
            busy_timeout=busy_timeout,
            synchronous=sqlite_synchronous,
        )
    if url.startswith(("postgresql://", "postgres://")):
        from relay.store.postgres import PostgresStore

        return PostgresStore(url, connect_timeout=busy_timeout)
    raise BadStoreURL(
        f"store URL {url!r}: expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
    )
