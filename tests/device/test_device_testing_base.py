"""SpyreTestBase: upstream's instantiate_device_type_tests generates spyre tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TEMPLATE_FILE = """
{prelude}
import torch
from torch.testing._internal.common_device_type import (
    instantiate_device_type_tests, dtypes, ops, device_type_test_bases)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests


class TestGeneric(TestCase):
    @dtypes(torch.float32, torch.float16)
    def test_add(self, device, dtype):
        self.assertEqual(torch.device(device).type, "spyre")
        x = torch.ones(3, device=device, dtype=dtype)
        self.assertEqual((x + x).cpu(), torch.full((3,), 2.0, dtype=dtype))

    @ops([op for op in op_db if op.name == "mul"], allowed_dtypes=(torch.bfloat16,))
    def test_op(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            self.assertEqual(op(sample.input, *sample.args, **sample.kwargs).device.type, "spyre")


instantiate_device_type_tests(TestGeneric, globals(), only_for="privateuse1")
print("BASES", sorted(b.__name__ for b in device_type_test_bases))

if __name__ == "__main__":
    run_tests()
"""


def _run(tmp_path: Path, prelude: str) -> subprocess.CompletedProcess[str]:
    from torch_spyre_ref.testing import TEST_DEVICES_PATH

    script = tmp_path / "test_generic.py"
    script.write_text(TEMPLATE_FILE.format(prelude=prelude))
    env = {**os.environ, "TORCH_TEST_DEVICES": TEST_DEVICES_PATH, "PYTHONPATH": str(REPO)}
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "privateuse1"
    return subprocess.run(
        [sys.executable, str(script), "-v"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _check(result: subprocess.CompletedProcess[str]) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for name in ("test_add_spyre_float32", "test_add_spyre_float16", "test_op_mul_spyre_bfloat16"):
        assert f"TestGenericSPYRE.{name}) ... ok" in output, output
    assert "Ran 3 tests" in output, output
    bases = next(line for line in output.splitlines() if line.startswith("BASES "))
    assert "'SpyreTestBase'" in bases and "'PrivateUse1TestBase'" not in bases, bases


def test_torch_test_devices_loads_spyre_base(tmp_path: Path) -> None:
    _check(_run(tmp_path, ""))


def test_backend_imported_first_does_not_duplicate_tests(tmp_path: Path) -> None:
    _check(_run(tmp_path, "import torch_spyre_ref"))


def test_spyre_test_base_is_a_privateuse1_test_base() -> None:
    from torch.testing._internal.common_device_type import PrivateUse1TestBase

    from torch_spyre_ref.testing import SpyreTestBase

    assert issubclass(SpyreTestBase, PrivateUse1TestBase)
    assert SpyreTestBase.device_type == "spyre"
