"""Numbered SQL migrations, shared by both dialects.

Files live in `relay/store/migrations/` as `NNN_name.sql` (both dialects), or as
a pair `NNN_name.sqlite.sql` + `NNN_name.postgres.sql` when the dialects must
differ. Ranges: 001-049 ingest and dispatch, 050-079 callbacks and results,
080-099 dashboard. Statements are separated by a `;` at the end of a line.
Applied versions are recorded in `schema_migrations`; each migration runs in
its own transaction, under a lock so that concurrent starters apply it once.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from relay.store.errors import MigrationError

if TYPE_CHECKING:
    from relay.store.base import Store, Tx

_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+?)(?:\.(sqlite|postgres))?\.sql$")
_ADVISORY_LOCK_KEY = 0x5C1_2E1A7  # any constant shared by every relay process


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def split_statements(sql: str) -> list[str]:
    """Split on `;` at line ends, dropping `--` comment lines and empty statements."""
    lines = [ln for ln in sql.splitlines() if not ln.lstrip().startswith("--")]
    parts = re.split(r";\s*$", "\n".join(lines), flags=re.M)
    return [p.strip() for p in parts if p.strip()]


def load_migrations(dialect: str) -> list[Migration]:
    folder = resources.files("relay.store") / "migrations"
    found: dict[int, Migration] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        match = _NAME.match(entry.name)
        if entry.name.endswith(".sql") and not match:
            raise MigrationError(
                f"migration file {entry.name}: name must be NNN_name[.dialect].sql"
            )
        if not match or match.group(3) not in (None, dialect):
            continue
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"migration {version:03d} is defined twice ({entry.name})")
        found[version] = Migration(version, match.group(2), entry.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]


def _ensure_table(store: Store) -> None:
    with store.transaction() as tx:
        tx.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at DOUBLE PRECISION NOT NULL)"
        )


def _lock(tx: Tx) -> None:
    if tx.dialect == "postgres":
        # Another starter may hold the lock for a long migration: wait for it, and let
        # a migration's statements run as long as they need.
        tx.execute("SET LOCAL lock_timeout = 0")
        tx.execute("SET LOCAL statement_timeout = 0")
        tx.scalar("SELECT pg_advisory_xact_lock(?)", (_ADVISORY_LOCK_KEY,))


def apply_migrations(store: Store) -> list[int]:
    try:
        _ensure_table(store)
    except Exception as exc:
        # Two PostgreSQL starters may race on CREATE TABLE IF NOT EXISTS; retry once.
        if store.dialect != "postgres":
            raise
        del exc
        _ensure_table(store)
    applied: list[int] = []
    for migration in load_migrations(store.dialect):
        with store.transaction() as tx:
            _lock(tx)
            if tx.fetchone(
                "SELECT version FROM schema_migrations WHERE version = ?", (migration.version,)
            ):
                continue
            for statement in split_statements(migration.sql):
                try:
                    tx.execute(statement)
                except Exception as exc:
                    raise MigrationError(
                        f"migration {migration.version:03d}_{migration.name}: {exc}"
                    ) from exc
            tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            applied.append(migration.version)
    return applied


def applied_versions(store: Store) -> list[int]:
    with store.transaction(write=False) as tx:
        rows = tx.fetchall("SELECT version FROM schema_migrations ORDER BY version")
    return [int(r["version"]) for r in rows]
