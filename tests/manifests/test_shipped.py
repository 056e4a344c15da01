"""The shipped manifests: valid, lint-clean, float16/bfloat16/float32, ops = the capability file."""

from __future__ import annotations

from pathlib import Path

from test_manifests import load_manifest, load_manifests, reused_files
from test_manifests.capabilities import load_capabilities
from test_manifests.device_manifest import render
from test_manifests.lint import catalog_from_torch, lint
from test_manifests.merge import merge_manifests
from test_manifests.model import Mode
from test_manifests.run import SHIPPED_DIR, shipped_manifests

UPSTREAM_FILES = {
    "test/test_ops.py",
    "test/test_binary_ufuncs.py",
    "test/test_unary_ufuncs.py",
    "test/test_reductions.py",
    "test/test_view_ops.py",
    "test/test_indexing.py",
    "test/test_torch.py",
    "test/test_modules.py",
    "test/test_nn.py",
}


def test_the_shipped_set_covers_the_first_upstream_files() -> None:
    manifests = load_manifests(shipped_manifests())
    assert set(reused_files(manifests)) == UPSTREAM_FILES


def test_device_manifest_is_generated_from_the_capability_file() -> None:
    committed = (SHIPPED_DIR / "spyre_device.yaml").read_text()
    assert committed == render(), (
        "run: python -m test_manifests.device_manifest > test_manifests/manifests/spyre_device.yaml"
    )
    device = load_manifest(SHIPPED_DIR / "spyre_device.yaml").suite.global_
    caps = load_capabilities()
    assert [d.name for d in device.supported_dtypes] == ["float16", "bfloat16", "float32"]
    assert [op.name for op in device.supported_ops or []] == [op.name for op in caps.ops]
    for dtype in device.supported_dtypes:
        declared = caps.precision(dtype.name)
        assert dtype.precision is not None and declared is not None
        assert (dtype.precision.atol, dtype.precision.rtol) == (declared.atol, declared.rtol)


def _device_op(name: str) -> str:
    """The op an included name runs on the device: a Python reference (`_refs.X`, which
    test_ops.py's test_python_ref* templates run) stands for the OpInfo it is built from."""
    if not name.startswith("_refs."):
        return name
    from torch.testing._internal.common_methods_invocations import python_ref_db

    built_from = {ref.name: ref.torch_opinfo_name for ref in python_ref_db}
    return built_from.get(name, name)


def test_per_file_manifests_never_widen_the_device_capability() -> None:
    caps = load_capabilities()
    for path in shipped_manifests():
        suite = load_manifest(path).suite
        assert suite.global_.supported_ops is None or path.name == "spyre_device.yaml", path
        assert not suite.global_.supported_dtypes or path.name == "spyre_device.yaml", path
        for entry in suite.files:
            for test in entry.tests:
                for op in test.edits.ops.include:
                    assert caps.is_supported(_device_op(op.name)), (
                        f"{path}: {op.name} is not in the capability file"
                    )
                for dtype in test.edits.dtypes.include:
                    assert dtype.name in caps.supported_dtypes(), f"{path}: {dtype.name}"


def test_shipped_manifests_merge_and_lint_clean_with_reasons_everywhere() -> None:
    manifests = load_manifests(shipped_manifests())
    merge_manifests(manifests)  # no conflicts between them
    catalog = catalog_from_torch()
    for manifest in manifests:
        assert lint(manifest, catalog=catalog) == [], manifest.source
        for entry in manifest.suite.files:
            assert entry.owner or manifest.suite.owner
            for test in entry.tests:
                if test.mode is not Mode.MANDATORY_SUCCESS:
                    assert test.reason, f"{manifest.source}: {test.names}"


def test_shipped_dir_holds_only_manifests() -> None:
    assert {p.suffix for p in Path(SHIPPED_DIR).iterdir()} == {".yaml"}
