"""Maps in the cache: whole-file writes, the version rule, the loader select calls."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from selection.observed import SCHEMA_VERSION, ObservedMap
from selection.sources.deps_artifact import read_artifact, write_artifact
from selection.sources.deps_store import (
    StaleMap,
    UnusableMap,
    find_map,
    list_maps,
    load_observed,
    map_path,
    merged,
    read_document,
    scan_maps,
    write_document,
)


def _doc(version: str = "2.13.0+cpu", device: str = "spyre", **extra: Any) -> dict[str, Any]:
    return {
        "schema": "spyre-ci/deps",
        "schema_version": SCHEMA_VERSION,
        "torch_version": version,
        "torch_git_version": "abc",
        "device": device,
        "recorded_at": extra.pop("recorded_at", "2026-12-01T09:00:00Z"),
        "paths": ["eager", "backward"],
        "settings": {"max_samples": 4},
        "baseline": {"aten": [], "functions": ["torch/_dynamo/eval_frame.py::<module>"]},
        "pairs": extra.pop(
            "pairs",
            [
                {
                    "database": "opinfo",
                    "op": "add",
                    "dtype": "float16",
                    "status": "ok",
                    "aten": ["add.Tensor", "add.out"],
                    "functions": ["torch/_tensor.py::Tensor.__add__"],
                    "steps": 8,
                    "errors": 1,
                    "seconds": 0.5,
                },
                {
                    "database": "opinfo",
                    "op": "nn.functional.gelu",
                    "dtype": "float16",
                    "status": "ok",
                    "aten": ["gelu"],
                    "functions": [
                        "torch/_tensor.py::Tensor.__add__",
                        "torch/nn/functional.py::gelu",
                    ],
                },
                {
                    "database": "moduleinfo",
                    "op": "nn.Linear",
                    "dtype": "float32",
                    "status": "error: worker exited (-11)",
                    "aten": [],
                    "functions": [],
                },
            ],
        ),
    }


def test_document_round_trips_through_sqlite(tmp_path: Path) -> None:
    doc = _doc()
    path = write_document(tmp_path, doc)
    assert path == tmp_path / "deps" / "torch-2.13.0+cpu--spyre.sqlite"
    back = read_document(path)
    assert back["pairs"] == sorted(doc["pairs"], key=lambda r: (r["database"], r["op"], r["dtype"]))
    assert {k: back[k] for k in ("torch_version", "device", "paths", "settings", "baseline")} == {
        k: doc[k] for k in ("torch_version", "device", "paths", "settings", "baseline")
    }
    ObservedMap.from_document(back)  # a valid spyre-ci/deps document


def test_the_map_can_be_looked_up_by_name(tmp_path: Path) -> None:
    """`select` reads a name's pairs through the index on uses.name_id (made after the rows
    go in: kept up row by row it took most of a whole-scope write)."""
    path = write_document(tmp_path, _doc())
    with sqlite3.connect(path) as connection:
        indexes = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'uses'"
        ).fetchall()
        plan = connection.execute(
            "EXPLAIN QUERY PLAN SELECT pair_id FROM uses WHERE name_id = 1"
        ).fetchall()
    assert ("uses_by_name",) in indexes
    assert any("uses_by_name" in str(step) for step in plan)


def _reordered_doc() -> dict[str, Any]:
    """The three rows with the failed one between the recorded ones."""
    ok_add, ok_gelu, failed = _doc()["pairs"]
    return _doc(pairs=[ok_add, failed, ok_gelu])


def _tables_of(doc: dict[str, Any]) -> dict[str, dict[str, set[tuple[str, str, str]]]]:
    return ObservedMap.from_document(doc).tables()


def _loaded_after(tmp_path: Path, *statements: str) -> ObservedMap:
    """The map of `_reordered_doc` as `select` loads it once the statements ran on its file."""
    path = write_document(tmp_path, _reordered_doc())
    with sqlite3.connect(path) as connection:
        for statement in statements:
            connection.execute(statement)
    loaded = load_observed(tmp_path, "2.13.0+cpu", "spyre")
    assert loaded is not None
    return loaded


GELU = ("opinfo", "nn.functional.gelu", "float16")


def test_a_map_is_loaded_from_its_bitsets(tmp_path: Path) -> None:
    """`select` reads one bitset per name (`runs`), not the millions of `uses` rows: with
    the rows gone the map it loads is still whole, a failed pair between two recorded ones
    leaving no gap in the bits."""
    loaded = _loaded_after(tmp_path, "DELETE FROM uses")
    assert loaded.tables() == _tables_of(_reordered_doc())
    assert loaded.pairs_running_function("torch/nn/functional.py", "gelu") == {GELU}
    assert loaded.failed == {("moduleinfo", "nn.Linear", "float32"): "error: worker exited (-11)"}


@pytest.mark.parametrize(
    "statements",
    [
        ("DROP TABLE runs",),  # written before `runs` existed
        # a row deleted: the bitsets (here saying nothing ran) no longer match the pairs
        ("DELETE FROM runs", "DELETE FROM pairs WHERE op = 'nn.Linear'"),
        # a failed pair turned "ok" would shift gelu's bit onto nn.Linear: the count says so
        ("UPDATE pairs SET status = 'ok' WHERE op = 'nn.Linear'",),
    ],
)
def test_a_map_without_bitsets_or_whose_pairs_changed_is_read_from_its_rows(
    tmp_path: Path, statements: tuple[str, ...]
) -> None:
    loaded = _loaded_after(tmp_path, *statements)
    assert loaded.tables() == _tables_of(_reordered_doc())
    assert loaded.pairs_running_function("torch/nn/functional.py", "gelu") == {GELU}


def test_a_bitset_that_is_not_bytes_is_a_damaged_map(tmp_path: Path) -> None:
    path = write_document(tmp_path, _doc())
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE runs SET bits = 'ff'")
    with pytest.raises(UnusableMap, match=re.escape(f"{path} is not a readable map (runs: name")):
        load_observed(tmp_path, "2.13.0+cpu", "spyre")


def test_a_bitset_naming_a_pair_the_map_lacks_is_a_damaged_map(tmp_path: Path) -> None:
    path = write_document(tmp_path, _doc())
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE runs SET bits = ?", (bytes([0xFF]),))  # 8 pairs, of 2
    with pytest.raises(UnusableMap, match=re.escape(f"{path} is not a readable map (")):
        load_observed(tmp_path, "2.13.0+cpu", "spyre")


def test_the_artifact_holds_one_pair_per_line_with_sorted_keys(tmp_path: Path) -> None:
    path = tmp_path / "map.json.gz"
    write_artifact(path, _doc())
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    rows = [json.loads(line.strip().rstrip(",")) for line in lines if '"database":' in line]
    assert [(r["op"], r["dtype"]) for r in rows] == [
        ("add", "float16"), ("nn.functional.gelu", "float16"), ("nn.Linear", "float32"),
    ]  # fmt: skip
    assert all(list(r) == sorted(r) for r in rows)
    assert read_artifact(path) == _doc()


def test_load_observed_answers_what_select_asks(tmp_path: Path) -> None:
    write_document(tmp_path, _doc())
    observed = load_observed(tmp_path, "2.13.0", "spyre")
    assert observed is not None
    assert observed.pairs_running_function("torch/_tensor.py", "Tensor.__add__") == {
        ("opinfo", "add", "float16"),
        ("opinfo", "nn.functional.gelu", "float16"),
    }
    assert observed.pairs_running_aten("add") == {("opinfo", "add", "float16")}
    assert observed.failed == {("moduleinfo", "nn.Linear", "float32"): "error: worker exited (-11)"}
    assert not observed.is_recorded(("moduleinfo", "nn.Linear", "float32"))
    assert observed.baseline["functions"] == {"torch/_dynamo/eval_frame.py::<module>"}
    # the same map as the document form would give
    from_doc = ObservedMap.from_document(_doc())
    assert (observed.by_function, observed.baseline["functions"]) == (
        from_doc.by_function,
        from_doc.baseline["functions"],
    )


def test_version_rule_ignores_local_labels_but_not_releases(tmp_path: Path) -> None:
    write_document(tmp_path, _doc("2.13.0+cpu"))
    assert find_map(tmp_path, "2.13.0", "spyre") is not None
    assert find_map(tmp_path, "2.13.0+cu130", "spyre") is not None
    assert find_map(tmp_path, "2.13.1", "spyre") is None
    assert find_map(tmp_path, "2.13", "spyre") is None
    assert find_map(tmp_path, "2.13.0", "openreg") is None
    assert load_observed(tmp_path, "2.14.0", "spyre") is None


def test_exact_version_wins_then_newest_recording(tmp_path: Path) -> None:
    write_document(tmp_path, _doc("2.13.0+cpu", recorded_at="2026-12-02T00:00:00Z"))
    write_document(tmp_path, _doc("2.13.0", recorded_at="2026-12-01T00:00:00Z"))
    assert find_map(tmp_path, "2.13.0", "spyre") == map_path(tmp_path, "2.13.0", "spyre")
    assert find_map(tmp_path, "2.13.0+cu130", "spyre") == map_path(tmp_path, "2.13.0+cpu", "spyre")


def test_failed_write_keeps_the_previous_map_whole(tmp_path: Path) -> None:
    write_document(tmp_path, _doc())
    broken = _doc(pairs=[*_doc()["pairs"], {"database": "opinfo"}])  # a row missing its fields
    with pytest.raises(KeyError):
        write_document(tmp_path, broken)
    assert [p.name for p in (tmp_path / "deps").iterdir()] == ["torch-2.13.0+cpu--spyre.sqlite"]
    assert len(read_document(map_path(tmp_path, "2.13.0+cpu", "spyre"))["pairs"]) == 3


def test_partial_recording_replaces_only_its_pairs() -> None:
    old = _doc()
    new = _doc(pairs=[{"database": "opinfo", "op": "add", "dtype": "float16", "status": "ok",
                       "aten": ["add.Tensor"], "functions": []}])  # fmt: skip
    new["baseline"] = {
        "aten": [],
        "functions": ["torch/_decomp/__init__.py::core_aten_decompositions"],
    }
    both = merged(old, new)
    assert both["baseline"]["functions"] == [
        "torch/_decomp/__init__.py::core_aten_decompositions",
        "torch/_dynamo/eval_frame.py::<module>",
    ]
    rows = both["pairs"]
    assert [(r["op"], r["aten"]) for r in rows] == [
        ("nn.Linear", []),
        ("add", ["add.Tensor"]),
        ("nn.functional.gelu", ["gelu"]),
    ]


def test_an_unreadable_map_is_named_not_passed_over(tmp_path: Path) -> None:
    """A corrupt file that would serve the version asked for is not a missing map: the
    loader names it and why (select then says so, instead of silently going static)."""
    (tmp_path / "deps").mkdir()
    bad = tmp_path / "deps" / "torch-2.13.0+cpu--spyre.sqlite"
    bad.write_text("not sqlite")
    assert list_maps(tmp_path) == []
    ((unreadable,),) = [scan_maps(tmp_path)[1]]
    assert unreadable.path == bad and "not a database" in unreadable.reason
    with pytest.raises(UnusableMap, match=re.escape(f"{bad} is not a readable map (file is not a")):
        load_observed(tmp_path, "2.13.0", "spyre")
    assert load_observed(tmp_path, "2.14.0", "spyre") is None  # it would not serve that
    assert load_observed(tmp_path, "2.13.0", "openreg") is None
    with pytest.raises(sqlite3.DatabaseError):
        read_document(bad)


def test_a_map_with_a_damaged_table_is_named(tmp_path: Path) -> None:
    """Readable meta but a broken uses table (a partial copy, a hand edit): the loader names
    the file rather than returning a map that lacks what the pairs ran."""
    path = write_document(tmp_path, _doc())
    connection = sqlite3.connect(path)
    connection.execute("DROP TABLE uses")
    connection.commit()
    connection.close()
    with pytest.raises(
        UnusableMap, match=re.escape(f"{path} is not a readable map (no such table")
    ):
        load_observed(tmp_path, "2.13.0", "spyre")
    # the scan says so too (`deps show` warns, `deps export` fails naming it)
    assert list_maps(tmp_path) == []
    ((unreadable,),) = [scan_maps(tmp_path)[1]]
    assert unreadable.path == path and unreadable.reason == "no such table: uses"


def test_a_use_of_a_pair_the_map_lacks_is_a_damaged_map(tmp_path: Path) -> None:
    path = write_document(tmp_path, _doc())
    connection = sqlite3.connect(path)
    connection.execute("DELETE FROM pairs WHERE id = (SELECT MIN(pair_id) FROM uses)")
    connection.commit()
    connection.close()
    with pytest.raises(ValueError, match=r"a use of pair [0-9]+, which the map does not hold"):
        read_document(path)


def test_a_map_of_an_older_schema_is_not_used_and_says_why(tmp_path: Path) -> None:
    """A version-1 map counted what only torch.compile ran as eager: used today, one
    compile-only function would reach every instance of every pair that compiled."""
    path = write_document(tmp_path, _doc())
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("DELETE FROM meta WHERE key = 'schema_version'")  # as v1 wrote it
    connection.close()
    with pytest.raises(
        StaleMap, match=rf"map schema 1, this one reads {SCHEMA_VERSION}: what only"
    ):
        load_observed(tmp_path, "2.13.0", "spyre")
    assert read_document(path)["schema_version"] == 1  # exported as what it is


def test_a_map_of_a_newer_schema_is_not_used_and_says_to_upgrade(tmp_path: Path) -> None:
    path = write_document(tmp_path, _doc())
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
        )
    connection.close()
    with pytest.raises(StaleMap, match=r"recorded by a newer spyre-ci .*: upgrade spyre-ci"):
        load_observed(tmp_path, "2.13.0", "spyre")
