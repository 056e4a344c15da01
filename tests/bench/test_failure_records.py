"""The failure records of other backends (bench/bench_failure_records.py): read with their
line on bad input, renamed for this device once, matched exactly or as a substring, counted
per record, kept to the upgrade asked for, compared with a random selection."""

from __future__ import annotations

import re
from pathlib import Path

import bench_failure_records
import pytest
from bench_failure_records import (
    RECORDS,
    Record,
    _judge,
    for_upgrade,
    random_catch,
    read_records,
)


def _record(**fields: object) -> Record:
    base = dict(line=1, backend="xpu", confidence="high", file="test/test_ops.py",
                test_class="TestCommonXPU", name="test_out_abs_xpu_float32", substring=False)  # fmt: skip
    base.update(fields)
    return Record(**base)  # type: ignore[arg-type]


def test_a_record_is_renamed_for_the_device() -> None:
    wanted = _record().for_device("SPYRE", "spyre")
    assert wanted.matches("test/test_ops.py::TestCommonSPYRE::test_out_abs_spyre_float32")
    assert not wanted.matches("test/test_ops.py::TestCommonSPYRE::test_out_abs_spyre_float16")
    assert not wanted.matches("test/test_torch.py::TestCommonSPYRE::test_out_abs_spyre_float32")
    npu = _record(test_class="TestAutogradDeviceTypePRIVATEUSE1", name="test_x_npu_float64")
    assert npu.for_device("SPYRE", "spyre").matches(
        "test/test_ops.py::TestAutogradDeviceTypeSPYRE::test_x_spyre_float64"
    )


def test_a_substring_record_matches_every_variant() -> None:
    record = _record(name="test_python_ref__refs_fft", substring=True)
    node = "test/test_ops.py::TestCommonSPYRE::test_python_ref__refs_fft_fft2_spyre_float16"
    assert record.for_device("SPYRE", "spyre").matches(node)


class _Counted:
    """A compiled pattern whose substitutions are counted."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.calls = pattern, 0

    def sub(self, repl: str, text: str) -> str:
        self.calls += 1
        return self.pattern.sub(repl, text)


def test_judge_counts_reused_and_selected_instances_renaming_each_record_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node = "test/test_ops.py::TestCommonSPYRE::test_out_{}_spyre_float32"
    reused = [node.format(op) for op in ("abs", "abs_x", "abs_y", "neg")] * 25
    selected = {node.format("abs"), node.format("abs_x")}
    records = [
        _record(line=1),  # exact: the 25 copies of one instance
        _record(line=2, name="test_out_abs", substring=True),  # 75, 50 of them selected
        _record(line=3, file="test/test_nn.py"),  # not reused
    ]
    counted = _Counted(bench_failure_records._TEST_DEVICES)
    monkeypatch.setattr(bench_failure_records, "_TEST_DEVICES", counted)
    rows = _judge(records, reused, selected, "spyre")
    assert [(r["line"], r["reused"], r["selected"]) for r in rows] == [
        (1, 25, 25),
        (2, 75, 50),
        (3, 0, 0),
    ]
    assert counted.calls == len(records)  # not once per (record, reused instance)


def test_a_random_selection_catches_a_record_of_k_instances_with_about_s_to_the_k() -> None:
    rows = [{"reused": 1}, {"reused": 3}]
    expected = 0.5 + (50 * 49 * 48) / (100 * 99 * 98)
    assert random_catch(rows, 50, 100) == pytest.approx(expected)
    assert random_catch(rows, 50, 100) < 0.5 + 0.5  # not s per record
    assert random_catch([{"reused": 2}], 1, 100) == 0.0


def test_records_of_another_upgrade_are_left_out_with_a_line() -> None:
    records = [
        _record(line=1, torch_from="2.13", torch_to="2.14"),
        _record(line=2, torch_from="2.12", torch_to="2.13"),
        _record(line=3),  # names no upgrade: kept
    ]
    kept, note = for_upgrade(records, "2.13.0", "2.14")
    assert [r.line for r in kept] == [1, 3]
    assert note == (
        "records about another upgrade than 2.13.0 -> 2.14 left out: 1 (2.12 -> 2.13; lines 2)"
    )
    assert for_upgrade(records[:1], "2.13", "2.14") == (records[:1], "")
    assert all(r.torch_from == "2.13" and r.torch_to == "2.14" for r in read_records(RECORDS))


def test_the_shipped_records_read_and_a_bad_line_is_named(tmp_path: Path) -> None:
    assert len(read_records(RECORDS)) >= 100
    bad = tmp_path / "records.jsonl"
    bad.write_text(
        '{"backend": "xpu", "test_file": "test/test_ops.py", "test_name": "t"}\n{"backend": 1}\n'
    )
    with pytest.raises(SystemExit, match=r"records\.jsonl:2: not a failure record"):
        read_records(bad)
