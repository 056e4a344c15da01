"""bench/bench_rescore.py re-judges stored mutation rows: a row without a stored truth (a
`--no-truth` run) is reported as unusable in one line, not a KeyError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_rescore import _rows, unusable_line


def _results(path: Path, rows: list[object]) -> Path:
    path.write_text(json.dumps({"results": rows}), encoding="utf-8")
    return path


def _row(id_: str, **fields: object) -> dict[str, object]:
    return {"id": id_, "kind": "decomposition", "patch": "--- a\n+++ b\n", **fields}


def test_rows_without_a_truth_are_left_out_and_named(tmp_path: Path) -> None:
    first = _results(
        tmp_path / "a.json",
        [_row("kept", truth=[["abs", "float32"]]), _row("no-truth"), _row("later", truth=[])],
    )
    second = _results(tmp_path / "b.json", [_row("later"), "not a row"])  # replaces `later`
    chosen, unusable = _rows([first, second], None, None)
    assert [r["id"] for r in chosen] == ["kept"]
    assert unusable == {
        "no-truth": "truth",
        "later": "truth",
        "b.json row 2": "id, kind, patch, truth",
    }
    line = unusable_line(unusable)
    assert line.startswith("3 rows unusable, left out: ") and "\n" not in line
    assert "no-truth (no truth)" in line


def test_asking_for_an_unusable_row_by_id_reports_it(tmp_path: Path) -> None:
    results = _results(tmp_path / "a.json", [_row("no-truth"), _row("kept", truth=[])])
    chosen, unusable = _rows([results], ["no-truth"], None)
    assert chosen == [] and unusable == {"no-truth": "truth"}
    with pytest.raises(SystemExit, match="'missing' is in none of the results files"):
        _rows([results], ["missing"], None)
    assert unusable_line({}) == ""
