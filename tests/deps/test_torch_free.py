"""What `select` and a relay host load of spyre_ci.deps must not pull torch in."""

from __future__ import annotations

import subprocess
import sys


def test_cli_loader_recorder_and_truth_api_import_without_torch() -> None:
    modules = (
        "spyre_ci.deps.cli, selection.sources.deps_store, spyre_ci.deps.record, spyre_ci.deps.truth"
    )
    code = f"import sys, {modules}; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
