"""The mutation benchmark's pure parts live in bench/mutations (bench/ scripts import their
sibling modules top-level, as mypy's `mypy_path = ["bench"]` has it)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
