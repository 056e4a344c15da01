"""Which pairs `deps record` runs: the manifests' reused pairs, narrowed by the options."""

from __future__ import annotations

from pathlib import Path

import pytest

from spyre_ci.deps.scope import (
    PairFilter,
    ScopeError,
    capability_filter,
    installed_torch_root,
    reused_pairs,
)
from test_manifests.capabilities import default_capability_path


def test_filters_match_names_variants_and_dtypes() -> None:
    keep = PairFilter(frozenset({"nn.functional.pad", "add"}), frozenset({"float16"}))
    assert keep.keeps(("opinfo", "nn.functional.pad.constant", "float16"))
    assert keep.keeps(("opinfo", "add", "float16"))
    assert not keep.keeps(("opinfo", "add", "float32"))
    assert not keep.keeps(("opinfo", "addmm", "float16"))
    assert PairFilter().keeps(("moduleinfo", "nn.Linear", "float32"))


def test_capability_file_keeps_what_the_device_supports() -> None:
    pairs = [
        ("opinfo", "add", "float16"),
        ("opinfo", "cdist", "float32"),
        ("opinfo", "nn.functional.pad.constant", "float32"),
        ("opinfo", "add", "float64"),
        ("moduleinfo", "nn.Linear", "float32"),
        ("moduleinfo", "nn.Linear", "float64"),
    ]
    assert capability_filter(pairs, default_capability_path()) == [
        ("opinfo", "add", "float16"),
        ("opinfo", "nn.functional.pad.constant", "float32"),
        ("moduleinfo", "nn.Linear", "float32"),
    ]


def test_bad_capability_file_names_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "caps.yaml"
    bad.write_text("schema_version: 1\ndtypes: {supported: [{name: bfloat61}]}\n")
    with pytest.raises(ScopeError, match=r"caps\.yaml"):
        capability_filter([("opinfo", "add", "float16")], bad)


def test_shipped_manifests_reuse_opinfo_and_moduleinfo_pairs() -> None:
    pairs = reused_pairs(None, installed_torch_root())
    assert ("opinfo", "add", "float16") in pairs
    assert ("moduleinfo", "nn.Linear", "float32") in pairs
    assert all(dtype in {"float16", "bfloat16", "float32"} for _, _, dtype in pairs)
    assert not any(op == "cdist" for _, op, _ in pairs)  # not in the device's supported ops
