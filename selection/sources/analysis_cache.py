"""A cache of analysis results keyed by file content (git blob ids), in one SQLite file.

Parsing every changed Python file of a release upgrade costs tens of seconds; the same
blobs come back on every run against the same releases, so per-file results (the symbol
changes between two blobs, a module's link-graph summary) are kept under
`<cache>/analysis.sqlite`. Values are pickled; a key carries the analysis version -- a hash
of the sources of the modules that compute what is cached -- so results of another version
of the analysis are never reused (no version to remember to bump). A broken or unwritable cache file is moved aside and the
run goes on without it (the cache is an optimisation, never a source of truth).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import pickle
import sqlite3
import time
from pathlib import Path
from typing import Any

# The modules whose code decides what is cached (symbol comparisons, module summaries).
ANALYSERS = (
    "selection.pyast",
    "selection.devices",
    "selection.detect",
    "selection.python",
    "selection.python.for_us",
    "selection.python.summary",
    "selection.python.chains",
    "selection.python.names",
    "selection.python.load_time",
    "selection.python.nested",
    "selection.python.nesting",
    "selection.python.failure_paths",
    "selection.python.op_lists",
    "selection.python.operators",
    "selection.python.receivers",
    "selection.python.argument_classes",
    "selection.python.specialize",
    "selection.python.runtime_annotations",
    "selection.gradients",
    "selection.observed",
    "selection.links.registrations",
    "selection.links.base",
    "selection.model",
    # what those import (a test checks the list is closed under imports)
    "selection.cpp.declarators",
    "selection.cpp.detect",
    "selection.cpp.diff",
    "selection.cpp.items",
    "selection.cpp.macros",
    "selection.cpp.paths",
    "selection.cpp.reader",
    "selection.cpp.scan",
    "selection.cpp.tokens",
    "selection.dtypes_eval",
    "selection.native_yaml",
    "selection.opinfo_db",
    "selection.oplists",
    "selection.sources.analysis_cache",
    "selection.sources.tree",
    "selection.upstream",
)


@functools.cache
def analysis_version() -> str:
    return modules_digest(ANALYSERS)


@functools.cache
def modules_digest(names: tuple[str, ...]) -> str:
    """A hash of the sources of `names`: a cached result of theirs is stale once one changes."""
    digest = hashlib.sha256()
    for name in names:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        digest.update(name.encode())
        digest.update(Path(origin).read_bytes() if origin else b"?")
    return digest.hexdigest()[:16]


class AnalysisCache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._pending: dict[str, bytes] = {}
        self._db: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._open(path)
        except (sqlite3.Error, OSError):
            self._set_aside()

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=10)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        db.execute("SELECT count(*) FROM kv LIMIT 1").fetchone()
        return db

    def _set_aside(self) -> None:
        self._db = None
        try:
            if self.path.exists():
                self.path.rename(
                    self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
                )
            self._db = self._open(self.path)
        except (sqlite3.Error, OSError):
            self._db = None

    @staticmethod
    def key(*parts: str) -> str:
        return "\0".join((analysis_version(), *parts))

    def get(self, key: str) -> Any | None:
        """The value, or None: never stored, or stored but no longer readable (a damaged
        entry, a class since renamed) -- a miss either way."""
        if key in self._pending:
            return _unpickled(self._pending[key])
        if self._db is None:
            return None
        try:
            row = self._db.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return _unpickled(row[0]) if row else None

    def put(self, key: str, value: Any) -> None:
        self._pending[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def flush(self) -> None:
        if self._db is None or not self._pending:
            self._pending.clear()
            return
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)",
                    list(self._pending.items()),
                )
        except sqlite3.Error:
            pass  # a read-only or full disk: the next run recomputes
        self._pending.clear()

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None


def _unpickled(data: bytes) -> Any | None:
    """pickle.loads can raise nearly anything on damaged bytes (UnpicklingError, EOFError,
    UnicodeDecodeError, ValueError, TypeError, MemoryError, a missing class's AttributeError or
    ImportError, ...): each is a miss."""
    try:
        return pickle.loads(data)
    except Exception:
        return None
