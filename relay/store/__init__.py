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
    "check_store_url",
    "open_store",
]


def check_store_url(url: str) -> None:
    """BadStoreURL unless `url` names a supported database (no I/O: the configuration
    checks it at load, before anything opens the store)."""
    if url.startswith("sqlite:///"):
        if not url[len("sqlite:///") :]:
            raise BadStoreURL(f"store URL {url!r} names no file")
        return
    if not url.startswith(("postgresql://", "postgres://")):
        raise BadStoreURL(
            f"store URL {url!r}: expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
        )


def open_store(url: str, *, busy_timeout: float = 5.0, sqlite_synchronous: str = "FULL") -> Store:
    """Open the store named by `url`: `sqlite:///relative/or/absolute/path.db`,
    `sqlite:////abs/path.db`, or `postgresql://...` / `postgres://...`."""
    check_store_url(url)
    if url.startswith("sqlite:///"):
        from relay.store.sqlite import SqliteStore

        path = url[len("sqlite:///") :]
        return SqliteStore(
            Path(path).expanduser().absolute(),
            busy_timeout=busy_timeout,
            synchronous=sqlite_synchronous,
        )
    from relay.store.postgres import PostgresStore

    return PostgresStore(url, connect_timeout=busy_timeout)
