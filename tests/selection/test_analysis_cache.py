"""The analysis cache (selection.sources.analysis_cache) is an optimisation: a stored entry
that no longer unpickles is a miss, never an error of the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from selection.sources.analysis_cache import AnalysisCache

DAMAGED = {
    "truncated": b"\x80\x05\x95\x10\x00\x00",
    "a string that is not UTF-8": b"\x80\x04X\x02\x00\x00\x00\xff\xfe.",  # UnicodeDecodeError
    "a reduce of a non-callable": b"\x80\x04K\x01)R.",  # TypeError
    "not a pickle": b"\x00garbage",
    "stored as text": "not bytes",
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_entry_is_a_miss(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "analysis.sqlite"
    cache = AnalysisCache(path)
    cache.put("kept", {"a": 1})
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO kv (key, value) VALUES (?, ?)", ("damaged", DAMAGED[damage]))
    reopened = AnalysisCache(path)
    assert reopened.get("damaged") is None
    assert reopened.get("kept") == {"a": 1}  # the rest of the cache still serves
    reopened.put("damaged", [2])
    assert reopened.get("damaged") == [2]  # and the entry is recomputed over
    reopened.close()
