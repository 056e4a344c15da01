"""The real PyTorch source tree some tests read (`make test` fetches Debian's 2.6.0 with
scripts/fetch-pytorch-src.sh and passes it as SPYRE_CI_PYTORCH_SRC)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytorch_src(config: pytest.Config, needs: str) -> Path:
    """The tree given by --pytorch-src or SPYRE_CI_PYTORCH_SRC, holding `needs` (a path in
    it); skips the test when there is none."""
    src = config.getoption("pytorch_src", default=None) or os.environ.get("SPYRE_CI_PYTORCH_SRC")
    if not src or not (Path(src) / needs).is_file():
        pytest.skip(
            "no PyTorch source tree: pass --pytorch-src DIR or set SPYRE_CI_PYTORCH_SRC "
            "(e.g. from `apt-get source pytorch`)"
        )
    return Path(src)
