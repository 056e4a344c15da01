"""The failure records of other backends (bench/bench_failure_records.py): read with their
line on bad input, renamed for this device, matched exactly or as a substring."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_failure_records import RECORDS, Record, read_records


def _record(**fields: object) -> Record:
    base = dict(line=1, backend="xpu", confidence="high", file="test/test_ops.py",
                test_class="TestCommonXPU", name="test_out_abs_xpu_float32", substring=False)  # fmt: skip
    base.update(fields)
    return Record(**base)  # type: ignore[arg-type]


def test_a_record_is_renamed_for_the_device() -> None:
    record = _record()
    assert record.matches(
        "test/test_ops.py::TestCommonSPYRE::test_out_abs_spyre_float32", "SPYRE", "spyre"
    )
    assert not record.matches(
        "test/test_ops.py::TestCommonSPYRE::test_out_abs_spyre_float16", "SPYRE", "spyre"
    )
    assert not record.matches(
        "test/test_torch.py::TestCommonSPYRE::test_out_abs_spyre_float32", "SPYRE", "spyre"
    )
    npu = _record(test_class="TestAutogradDeviceTypePRIVATEUSE1", name="test_x_npu_float64")
    assert npu.matches(
        "test/test_ops.py::TestAutogradDeviceTypeSPYRE::test_x_spyre_float64", "SPYRE", "spyre"
    )


def test_a_substring_record_matches_every_variant() -> None:
    record = _record(name="test_python_ref__refs_fft", substring=True)
    node = "test/test_ops.py::TestCommonSPYRE::test_python_ref__refs_fft_fft2_spyre_float16"
    assert record.matches(node, "SPYRE", "spyre")


def test_the_shipped_records_read_and_a_bad_line_is_named(tmp_path: Path) -> None:
    assert len(read_records(RECORDS)) >= 100
    bad = tmp_path / "records.jsonl"
    bad.write_text(
        '{"backend": "xpu", "test_file": "test/test_ops.py", "test_name": "t"}\n{"backend": 1}\n'
    )
    with pytest.raises(SystemExit, match=r"records\.jsonl:2: not a failure record"):
        read_records(bad)
