"""Fixtures for the manifest runner tests: upstream-style test trees run through pytester."""

from __future__ import annotations

import pytest

from tests.manifests.upstream_tree import UpstreamTree


@pytest.fixture(scope="session")
def torch_testing() -> None:
    """Import torch's test machinery once, outside pytester's per-run module snapshot."""
    pytest.importorskip("torch")
    import torch.testing._internal.common_device_type
    import torch.testing._internal.common_methods_invocations
    import torch.testing._internal.common_modules  # noqa: F401

    import torch_spyre_ref
    import torch_spyre_ref.testing  # noqa: F401


@pytest.fixture
def upstream(pytester: pytest.Pytester, torch_testing: None) -> UpstreamTree:
    return UpstreamTree(pytester)
