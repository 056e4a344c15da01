"""Recorded maps in the cache: one SQLite file per (torch version, device). Torch-free.

`<cache>/deps/torch-<version>--<device>.sqlite` (cache: --cache-dir, $SPYRE_CI_CACHE, default
~/.cache/spyre-ci, as for `spyre-ci select`). A map is always written whole into a temporary
file beside it and then renamed over the old one, so a failed or interrupted write leaves
the previous map (or none), never half of one.

A map is held as its `spyre-ci/deps` document (selection.observed); the rows may carry
`steps`, `errors`, `seconds` and `cpu_seconds`, the document `settings` and `baseline` (what the recording
processes ran in their warm-up, before the first pair: lazy imports, first-use initialisation).

Version matching (`find_map`, `load_observed`): a map recorded on the exact version string
asked for wins; otherwise versions are compared without their local label (`2.13.0+cpu`
serves `2.13.0` and `2.13.0+cu130`, `2.13.0` serves `2.13.0+cpu`), the most recently recorded
map first. Release segments must be equal: `2.13` is not `2.13.0`, and `2.13.1` is not `2.13.0`.
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selection.observed import (
    NAME_LISTS,
    SCHEMA,
    SCHEMA_VERSION,
    ObservedMap,
    Pair,
    bitmap_of,
)

_SCHEMA_SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pairs (
    id INTEGER PRIMARY KEY, database TEXT NOT NULL, op TEXT NOT NULL, dtype TEXT NOT NULL,
    status TEXT NOT NULL, steps INTEGER, errors INTEGER, seconds REAL, cpu_seconds REAL,
    UNIQUE (database, op, dtype));
CREATE TABLE names (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,
    UNIQUE (kind, name));
CREATE TABLE uses (pair_id INTEGER NOT NULL, name_id INTEGER NOT NULL,
    PRIMARY KEY (pair_id, name_id)) WITHOUT ROWID;
CREATE TABLE runs (name_id INTEGER PRIMARY KEY, bits BLOB NOT NULL);
"""
# `runs` holds `uses` again, one bitset per name over the recorded ("ok") pairs in id order
# (bit i: the i-th), so that `select` loads a map without walking millions of rows in Python
# (2.9 s of CPU for the whole scope's map, of a warm 2.13 -> 2.14 select's 22 s). `runs_pairs`
# in meta is how many pairs the bitsets count: a map whose pair ids are not 1..N or whose
# recorded pairs are not that many (or one written before `runs`) is read from `uses`. Both
# are written together, whole; damage to `uses` alone is seen by `deps export`, which
# reads it, not by `select`.
_RUNS_PAIRS = "runs_pairs"
# made once the uses are in: kept up while millions of rows go in, it took 3/4 of the write
_INDEX_SQL = "CREATE INDEX uses_by_name ON uses (name_id)"
_META_KEYS = ("schema_version", "torch_version", "torch_git_version", "device", "recorded_at")
_JSON_META = ("paths", "settings", "baseline")
_KINDS = NAME_LISTS
ROW_EXTRAS = ("steps", "errors", "seconds", "cpu_seconds")  # optional numbers per row
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


def deps_dir(cache_dir: Path) -> Path:
    return cache_dir / "deps"


def map_path(cache_dir: Path, torch_version: str, device: str) -> Path:
    name = f"torch-{_UNSAFE.sub('_', torch_version)}--{_UNSAFE.sub('_', device)}.sqlite"
    return deps_dir(cache_dir) / name


def write_document(cache_dir: Path, doc: dict[str, Any]) -> Path:
    """Store a (validated) document as the map of its (torch version, device)."""
    final = map_path(cache_dir, doc["torch_version"], doc["device"])
    final.parent.mkdir(parents=True, exist_ok=True)
    temporary = final.with_name(f"{final.name}.tmp-{os.getpid()}")
    temporary.unlink(missing_ok=True)
    try:
        connection = sqlite3.connect(temporary)
        try:
            _fill(connection, doc)
            connection.commit()
        finally:
            connection.close()
        os.replace(temporary, final)
    finally:
        temporary.unlink(missing_ok=True)
    return final


def _fill(connection: sqlite3.Connection, doc: dict[str, Any]) -> None:
    connection.executescript(_SCHEMA_SQL)
    meta = [(key, str(doc.get(key, ""))) for key in _META_KEYS]
    meta += [(key, json.dumps(doc.get(key, [] if key == "paths" else {}))) for key in _JSON_META]
    connection.executemany("INSERT INTO meta VALUES (?, ?)", meta)
    name_ids: dict[tuple[str, str], int] = {}
    uses: list[tuple[int, int]] = []
    for pair_id, row in enumerate(doc["pairs"], start=1):
        values = (pair_id, row["database"], row["op"], row["dtype"], row["status"])
        extras = tuple(row.get(key) for key in ROW_EXTRAS)
        connection.execute("INSERT INTO pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values + extras)
        for kind in _KINDS:
            for name in row.get(kind, ()):
                key = (kind, name)
                if key not in name_ids:
                    name_ids[key] = len(name_ids) + 1
                uses.append((pair_id, name_ids[key]))
    connection.executemany(
        "INSERT INTO names VALUES (?, ?, ?)", [(i, k, n) for (k, n), i in name_ids.items()]
    )
    connection.executemany("INSERT OR IGNORE INTO uses VALUES (?, ?)", uses)
    connection.execute(_INDEX_SQL)
    _fill_runs(connection, [row["status"] == "ok" for row in doc["pairs"]], uses)


def _fill_runs(connection: sqlite3.Connection, ok: list[bool], uses: list[tuple[int, int]]) -> None:
    """The `runs` bitsets of `uses` (pair ids count from 1, in the order of `ok`)."""
    position = list(itertools.accumulate(ok, initial=0))  # pair id -> index among "ok" ones
    ran: dict[int, list[int]] = {}
    for pair_id, name_id in uses:
        if ok[pair_id - 1]:
            ran.setdefault(name_id, []).append(position[pair_id - 1])
    rows = [(name_id, bitmap_of(indices, position[-1])) for name_id, indices in ran.items()]
    connection.executemany("INSERT INTO runs VALUES (?, ?)", rows)
    connection.execute("INSERT INTO meta VALUES (?, ?)", (_RUNS_PAIRS, str(position[-1])))


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def read_meta(path: Path) -> dict[str, Any]:
    connection = _connect(path)
    try:
        meta: dict[str, Any] = dict(connection.execute("SELECT key, value FROM meta"))
    finally:
        connection.close()
    for key in _JSON_META:
        meta[key] = json.loads(meta.get(key) or "null")
    return meta


def read_document(path: Path) -> dict[str, Any]:
    """The whole map as a `spyre-ci/deps` document (rows sorted, lists sorted)."""
    meta = read_meta(path)
    connection = _connect(path)
    try:
        rows: dict[int, dict[str, Any]] = {}
        columns = ", ".join(ROW_EXTRAS)
        for pid, database, op, dtype, status, *extras in connection.execute(
            f"SELECT id, database, op, dtype, status, {columns} FROM pairs"
        ):
            row: dict[str, Any] = {"database": database, "op": op, "dtype": dtype}
            row |= {"status": status, "aten": [], "functions": []}
            row |= {k: v for k, v in zip(ROW_EXTRAS, extras, strict=True) if v is not None}
            rows[pid] = row
        for pid, kind, name in connection.execute(
            "SELECT uses.pair_id, names.kind, names.name FROM uses JOIN names ON names.id = uses.name_id"
        ):
            if pid not in rows:
                raise ValueError(f"a use of pair {pid}, which the map does not hold")
            rows[pid].setdefault(kind, []).append(name)
    finally:
        connection.close()
    for row in rows.values():
        for kind in NAME_LISTS:
            if kind in row:
                row[kind].sort()
    doc: dict[str, Any] = {"schema": SCHEMA}
    doc |= {key: meta.get(key, "") for key in _META_KEYS}
    doc["schema_version"] = stored_schema_version(meta)
    doc |= {key: meta[key] for key in _JSON_META if meta.get(key) is not None}
    doc["pairs"] = sorted(rows.values(), key=lambda r: (r["database"], r["op"], r["dtype"]))
    return doc


@dataclass(frozen=True)
class MapSummary:
    path: Path
    torch_version: str
    device: str
    recorded_at: str
    recorded: int
    failed: int
    failures: tuple[tuple[Pair, str], ...]
    schema_version: int = SCHEMA_VERSION


def summarize(path: Path) -> MapSummary:
    meta = read_meta(path)
    connection = _connect(path)
    try:
        rows = list(connection.execute("SELECT database, op, dtype, status FROM pairs"))
        for table in ("names", "uses"):  # read only by a load: a missing one is said here
            connection.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()
    finally:
        connection.close()
    failures = tuple(sorted(((d, o, t), s) for d, o, t, s in rows if s != "ok"))
    return MapSummary(
        path, meta.get("torch_version", ""), meta.get("device", ""),
        meta.get("recorded_at", ""), len(rows) - len(failures), len(failures), failures,
        stored_schema_version(meta),
    )  # fmt: skip


@dataclass(frozen=True)
class UnreadableMap:
    """A file named like a map that SQLite cannot read as one (corrupt, truncated, not a
    database, no such tables)."""

    path: Path
    reason: str

    def describe(self) -> str:
        return f"{self.path} is not a readable map ({self.reason}): record it again or delete it"

    def could_serve(self, torch_version: str, device: str) -> bool:
        """Whether its name says it would serve (torch_version, device) (see the module
        docstring): then its absence must be said, not passed over."""
        stem = self.path.name.removeprefix("torch-").removesuffix(".sqlite")
        version, _, named_device = stem.rpartition("--")
        return named_device == _UNSAFE.sub("_", device) and public_version(
            version
        ) == public_version(_UNSAFE.sub("_", torch_version))


def scan_maps(cache_dir: Path) -> tuple[list[MapSummary], list[UnreadableMap]]:
    """The readable maps in the cache, and the files named like maps that are not."""
    found, unreadable = [], []
    for path in sorted(deps_dir(cache_dir).glob("torch-*.sqlite")):
        try:
            found.append(summarize(path))
        except (sqlite3.Error, ValueError) as exc:  # ValueError: meta JSON that is not
            unreadable.append(UnreadableMap(path, str(exc) or type(exc).__name__))
    return found, unreadable


def list_maps(cache_dir: Path) -> list[MapSummary]:
    """Every readable map in the cache (see `scan_maps` for the others)."""
    return scan_maps(cache_dir)[0]


def public_version(version: str) -> str:
    """`2.13.0+cpu` -> `2.13.0` (the local label is a build variant of the same release)."""
    return version.split("+", 1)[0]


def choose_map(maps: Iterable[MapSummary], torch_version: str, device: str) -> MapSummary | None:
    """The map that serves (torch_version, device), per the rule in the module docstring;
    a map of the current schema before any older one (which only serves to say it is
    stale when it is all there is)."""
    serving = [m for m in maps if m.device == device]
    current = [m for m in serving if m.schema_version == SCHEMA_VERSION]
    return _choose_version(current, torch_version) or _choose_version(serving, torch_version)


def _choose_version(candidates: list[MapSummary], torch_version: str) -> MapSummary | None:
    exact = [m for m in candidates if m.torch_version == torch_version]
    close = exact or [
        m for m in candidates if public_version(m.torch_version) == public_version(torch_version)
    ]
    return max(close, key=lambda m: m.recorded_at) if close else None


def find_map(cache_dir: Path, torch_version: str, device: str) -> Path | None:
    chosen = choose_map(list_maps(cache_dir), torch_version, device)
    return chosen.path if chosen is not None else None


class UnusableMap(Exception):
    """The map that would serve cannot be used; the message says which file and why."""


class StaleMap(UnusableMap):
    """A map written by an older recorder, whose figures mean something else now."""


def stored_schema_version(meta: dict[str, Any]) -> int:
    """The map's schema version; maps from before it was stored are version 1."""
    try:
        return int(meta.get("schema_version") or 1)
    except ValueError:
        return 1


# What a map of the version before each one got wrong (why it is not used).
_SCHEMA_CHANGES = {
    2: "what only compiled paths ran was not kept apart",
    3: "nested functions were credited to the function defining them, and the warm-up's "
    "compile-only names to every eager pair",
    4: "a meta kernel was credited only to the first pair of a worker that traced its op "
    "over inputs of one shape (the fake-tensor cache was not cleared between pairs)",
}


def stale_because(version: int) -> str:
    return "; ".join(why for v, why in sorted(_SCHEMA_CHANGES.items()) if v > version)


def load_observed(cache_dir: Path, torch_version: str, device: str) -> ObservedMap | None:
    """The recorded map serving (torch_version, device), or None when there is none.

    Reads SQLite only (no torch). A map of another schema raises StaleMap, and a file that
    would serve but cannot be read raises UnusableMap naming it (the caller says so: neither
    is passed over in silence; one beside the map used is named in its `beside`).
    """
    maps, unreadable = scan_maps(cache_dir)
    chosen = choose_map(maps, torch_version, device)
    if chosen is None:
        serving = [u for u in unreadable if u.could_serve(torch_version, device)]
        if serving:
            raise UnusableMap(serving[0].describe())
        return None
    path, version = chosen.path, chosen.schema_version
    try:
        if version > SCHEMA_VERSION:
            raise StaleMap(
                f"{path} was recorded by a newer spyre-ci (map schema {version}, this one "
                f"reads {SCHEMA_VERSION}): upgrade spyre-ci, or record the map again"
            )
        if version != SCHEMA_VERSION:
            raise StaleMap(
                f"{path} was recorded by an older spyre-ci (map schema {version}, this one "
                f"reads {SCHEMA_VERSION}: {stale_because(version)}); record it again with "
                "`spyre-ci deps record`"
            )
        observed = _observed_from(path)
    except (sqlite3.Error, KeyError, ValueError) as exc:  # KeyError: a use of a name it lacks
        raise UnusableMap(UnreadableMap(path, str(exc) or type(exc).__name__).describe()) from exc
    # a damaged file that would serve too (the exact version's, beside a build variant's)
    observed.beside = tuple(
        u.describe() for u in unreadable if u.could_serve(torch_version, device)
    )
    return observed


def _observed_from(path: Path) -> ObservedMap:
    meta = read_meta(path)
    observed = ObservedMap(
        torch_version=meta.get("torch_version", ""),
        device=meta.get("device", ""),
        torch_git_version=meta.get("torch_git_version", ""),
        recorded_at=meta.get("recorded_at", ""),
        paths=tuple(meta.get("paths") or ()),
        source=str(path),
    )
    observed.add_baseline(meta.get("baseline") or {})
    connection = _connect(path)
    try:
        bit_of: dict[int, int] = {}  # pair id -> the pair's index in the map
        ids: list[int] = []
        for pid, database, op, dtype, status in connection.execute(
            "SELECT id, database, op, dtype, status FROM pairs ORDER BY id"
        ):
            ids.append(pid)
            pair: Pair = (database, op, dtype)
            if status == "ok":
                observed.add(pair, [], [])
                bit_of[pid] = observed.index_of(pair)
            else:
                observed.failed[pair] = status
        names = {nid: (kind, name) for nid, kind, name in connection.execute("SELECT * FROM names")}
        intact = ids == list(range(1, len(ids) + 1)) and meta.get(_RUNS_PAIRS) == str(len(bit_of))
        if intact and _has_table(connection, "runs"):
            for nid, bits in connection.execute("SELECT name_id, bits FROM runs"):
                if not isinstance(bits, bytes):  # SQLite keeps any type in any column
                    raise ValueError(f"runs: name {nid} holds a {type(bits).__name__}, not bits")
                observed.add_bits(*names[nid], int.from_bytes(bits, "little"))
        else:
            rows = connection.execute("SELECT name_id, pair_id FROM uses ORDER BY name_id")
            for nid, uses in itertools.groupby(rows, key=operator.itemgetter(0)):
                ran = [bit_of[pid] for _, pid in uses if pid in bit_of]
                if ran:
                    observed.add_runs_at(*names[nid], ran)
    finally:
        connection.close()
    return observed


def _has_table(connection: sqlite3.Connection, table: str) -> bool:
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return connection.execute(query, (table,)).fetchone() is not None


def merged(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the rows of `old` for pairs `new` did not record (a partial re-recording
    replaces only its own pairs)."""
    if old is None:
        return new
    mine = {(r["database"], r["op"], r["dtype"]) for r in new["pairs"]}
    kept = [r for r in old["pairs"] if (r["database"], r["op"], r["dtype"]) not in mine]
    rows = sorted([*kept, *new["pairs"]], key=lambda r: (r["database"], r["op"], r["dtype"]))
    old_baseline, new_baseline = old.get("baseline", {}), new.get("baseline", {})
    baseline = {
        kind: sorted({*old_baseline.get(kind, ()), *new_baseline.get(kind, ())})
        for kind in {*old_baseline, *new_baseline}
    }
    return new | {"pairs": rows, "baseline": baseline}
