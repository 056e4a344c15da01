"""The capability file and its torch-free loader (test_manifests.capabilities)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from test_manifests.capabilities import (
    CapabilityError,
    capabilities_from_text,
    default_capability_path,
    load_capabilities,
)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "torch_spyre_ref" / "capabilities.yaml"


def test_loader_does_not_import_torch_or_the_device() -> None:
    code = (
        "import sys\n"
        "from test_manifests.capabilities import load_capabilities\n"
        "caps = load_capabilities()\n"
        "assert caps.supported_dtypes() == ['float16', 'bfloat16', 'float32'], caps\n"
        "assert 'torch' not in sys.modules and 'torch_spyre_ref' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_default_path_is_the_shipped_file() -> None:
    assert default_capability_path().resolve() == SHIPPED


def test_shipped_file_declares_dtypes_ops_and_limits() -> None:
    caps = load_capabilities()
    assert caps.supported_dtypes() == ["float16", "bfloat16", "float32"]
    assert {d.name for d in caps.dtypes.unsupported} >= {"float64", "complex64", "complex128"}
    assert caps.is_supported("nn.functional.gelu", "bfloat16")
    assert not caps.is_supported("linalg.svd")
    assert caps.op("mm") is not None and caps.op("mm").matmul_class  # type: ignore[union-attr]
    assert caps.precision("float16") is not None


def test_every_op_name_is_an_opinfo_name() -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    names = {op.name for op in op_db}
    caps = load_capabilities()
    assert [op.name for op in caps.ops if op.name not in names] == []
    assert [e.op for e in caps.opinfo_exceptions if e.op not in names] == []


def _error(text: str) -> str:
    with pytest.raises(CapabilityError) as error:
        capabilities_from_text(text, "caps.yaml")
    return str(error.value)


def _with(replace: str, by: str) -> str:
    text = SHIPPED.read_text()
    assert replace in text
    return text.replace(replace, by, 1)


def test_errors_name_file_line_and_field() -> None:
    line = SHIPPED.read_text().splitlines().index("    - name: bfloat16") + 1
    message = _error(_with("    - name: bfloat16", "    - name: bfloat61"))
    assert message.startswith(f"caps.yaml:{line}:") and "dtypes.supported[1]" in message
    assert "unknown dtype 'bfloat61'" in message


def test_eager_ops_is_kernels_or_compiled() -> None:
    assert "eager_ops" in _error(_with("  eager_ops: kernels", "  eager_ops: interpreted"))


def test_unknown_keys_and_missing_fields_are_rejected() -> None:
    assert "unknown key 'colour'" in _error(_with("  cores: 32", "  cores: 32\n  colour: blue"))
    message = _error(_with("  cores: 32\n", ""))
    assert "device.cores" in message and "missing required field" in message


def test_inconsistent_entries_are_rejected() -> None:
    message = _error(_with("  - {name: abs}", "  - {name: abs, dtypes: [float64]}"))
    assert "op 'abs' lists dtypes the device does not support" in message
    assert "op 'add' is listed twice" in _error(_with("  - {name: abs}", "  - {name: add}"))
    assert "malformed YAML" in _error("ops: [")


def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(CapabilityError, match="cannot read"):
        load_capabilities(tmp_path / "missing.yaml")
