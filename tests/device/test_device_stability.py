"""Consecutive fresh interpreters running forward+backward on spyre exit cleanly (no abort at
interpreter exit, no crash in the autograd engine). The benchmark runs 100."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS = 3


def test_consecutive_interpreters_exit_cleanly() -> None:
    losses = set()
    for run in range(RUNS):
        done = subprocess.run(
            [sys.executable, "-m", "torch_spyre_ref.stability"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"run {run}: exit {done.returncode}\n{done.stderr}"
        assert done.stderr == "", done.stderr
        losses.add(done.stdout.strip())
    assert len(losses) == 1 and next(iter(losses)).startswith("loss ")  # seeded: same result
