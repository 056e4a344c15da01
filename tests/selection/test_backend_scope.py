"""The shipped manifests' answer for instances that widening brings in (`--widen full`, a
file the base lacks, `--disable-stage map`): every enumerated instance is asked, including
those of dtypes no manifest can name (`test_storage_setitem` runs over quint8, qint32)."""

from __future__ import annotations

from selection import model
from selection.backend import BackendScope


def test_a_dtype_no_manifest_names_is_not_run_with_the_reason() -> None:
    backend = BackendScope.load()
    quantized = model.TestInstance(
        "test/test_torch.py", "TestTorchDeviceType", "TestTorchDeviceTypeSPYRE",
        "test_storage_setitem", "test_storage_setitem_spyre_quint8", dtype="quint8",
    )  # fmt: skip
    answer = backend.answer(quantized)
    assert not answer.runs
    assert answer.reason == "dtype quint8 is not one manifests name"
    assert not backend.runs(quantized)
    listed = model.TestInstance(
        "test/test_torch.py", "TestTorchDeviceType", "TestTorchDeviceTypeSPYRE",
        "test_storage_setitem", "test_storage_setitem_spyre_float32", dtype="float32",
    )  # fmt: skip
    assert backend.answer(listed).reason != answer.reason
