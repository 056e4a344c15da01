"""Shards balanced by recorded durations, falling back to counts; bad duration files named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selection.errors import BadInput
from selection.outputs.document import run_as
from selection.outputs.shards import actions_matrix, assign_shards, load_durations


def test_recorded_durations_balance_the_shards() -> None:
    ids = ["slow", "a", "b", "c", "d"]
    assignment, loads, basis = assign_shards(
        ids, 2, {"slow": 100.0, "a": 10.0, "b": 10.0, "c": 10.0, "d": 10.0}
    )
    assert basis == "durations"
    assert {i for i, s in assignment.items() if s == assignment["slow"]} == {"slow"}
    assert sorted(loads) == [40.0, 100.0]


def test_without_durations_shards_are_balanced_by_count() -> None:
    ids = [f"t{i}" for i in range(7)]
    assignment, loads, basis = assign_shards(ids, 3, {})
    assert basis == "counts"
    assert sorted(loads) == [2.0, 2.0, 3.0]
    assert sorted(assignment.values()) == [1, 1, 1, 2, 2, 3, 3]


def test_a_whole_class_run_for_several_patterns_is_in_one_shard_only() -> None:
    """`Class::test_foo*` runs as its whole class: every pattern of one class shares a shard,
    or the class would run once per shard."""
    ids = [f"test/test_nn.py::TestNN::test_{n}*" for n in "abcdef"]
    ids += [f"test/test_ops.py::TestCommon::test_out_{n}" for n in range(6)]
    assignment, loads, _ = assign_shards(ids, 4, {}, run_as)
    assert len({assignment[i] for i in ids[:6]}) == 1
    assert sorted(loads) == [2.0, 2.0, 2.0, 6.0]


def test_unknown_ids_cost_the_median_of_the_known_ones() -> None:
    _, loads, _ = assign_shards(
        ["known1", "known2", "known3", "new"], 1, {"known1": 1.0, "known2": 5.0, "known3": 9.0}
    )
    assert loads == [20.0]


def test_matrix_lists_only_shards_with_tests() -> None:
    assert actions_matrix([3.0, 0.0], [3, 0], "durations") == {
        "include": [{"shard": 1, "tests": 3, "estimated_seconds": 3.0, "balanced_by": "durations"}]
    }


def test_a_matrix_balanced_by_counts_estimates_no_seconds() -> None:
    """Without durations a shard's load counts tests: no seconds are claimed."""
    assert actions_matrix([3.0], [3], "counts") == {
        "include": [{"shard": 1, "tests": 3, "estimated_seconds": None, "balanced_by": "counts"}]
    }


def test_a_bad_durations_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"t": "slow"}))
    with pytest.raises(
        BadInput, match=r"durations\.json: expected a JSON object mapping test ids to seconds"
    ):
        load_durations(path)
    path.write_text("{")
    with pytest.raises(BadInput, match=r"durations\.json"):
        load_durations(path)
