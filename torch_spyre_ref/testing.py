"""Device-generic testing for spyre: ``SpyreTestBase`` for upstream's
``instantiate_device_type_tests``.

Two ways in:
- ``TORCH_TEST_DEVICES=<path of torch_spyre_ref/test_devices.py>`` (see ``TEST_DEVICES_PATH``):
  common_device_type runs that file while it is being imported; it imports this package (so the
  backend is registered) and hands ``SpyreTestBase`` over as ``TEST_CLASS``.
- Directly: ``from torch_spyre_ref.testing import SpyreTestBase`` and subclass it (the manifest
  runner does), then install it in ``common_device_type.device_type_test_bases``.

Hooks kept overridable: ``instantiate_test``, ``setUpClass``,
``_apply_precision_override_for_test`` (and ``capability_precision``, the default tolerance per
dtype from the capability file, which it applies when a test declares none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch
from torch.testing._internal.common_device_type import PrivateUse1TestBase

import torch_spyre_ref  # noqa: F401  (registers the device before any test class is built)

TEST_DEVICES_PATH = str(Path(__file__).with_name("test_devices.py"))


class SpyreTestBase(PrivateUse1TestBase):
    """The spyre device test base: tests are named ``..._spyre_<dtype>``."""

    device_type = "spyre"
    primary_device: ClassVar[str] = "spyre:0"
    device_mod = None

    @classmethod
    def get_primary_device(cls) -> str:
        return cls.primary_device

    @classmethod
    def setUpClass(cls) -> None:
        cls.device_mod = torch.spyre  # type: ignore[attr-defined]
        cls.primary_device = f"spyre:{cls.device_mod.current_device()}"
        # PrivateUse1TestBase.setUpClass would rename device_type from the backend name too;
        # ours is already "spyre".
        super(PrivateUse1TestBase, cls).setUpClass()

    @classmethod
    def instantiate_test(cls, name: str, test: Any, *, generic_cls: Any = None) -> None:
        super().instantiate_test(name, test, generic_cls=generic_cls)

    @staticmethod
    def capability_precision(dtype: torch.dtype) -> tuple[float, float] | None:
        """(atol, rtol) the capability file declares for ``dtype``, if any."""
        from test_manifests.capabilities import load_capabilities

        declared = load_capabilities().precision(str(dtype).removeprefix("torch."))
        return (declared.atol, declared.rtol) if declared is not None else None


TEST_CLASS = SpyreTestBase
