"""The capability file shipped with the device, loaded once (see test_manifests.capabilities)."""

from __future__ import annotations

import functools
from pathlib import Path

from test_manifests.capabilities import Capabilities, load_capabilities

CAPABILITY_FILE = Path(__file__).with_name("capabilities.yaml")


@functools.cache
def capabilities() -> Capabilities:
    return load_capabilities(CAPABILITY_FILE)
