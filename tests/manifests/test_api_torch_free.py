"""The models, the resolution and the tooling modules never import torch (the selection and
`spyre-ci --help` rely on it); only the runner modules do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TORCH_FREE = [
    "test_manifests",
    "test_manifests.scope",
    "test_manifests.merge",
    "test_manifests.lint",
    "test_manifests.explain",
    "test_manifests.run",
    "test_manifests.cli",
    "test_manifests.plugin",
    "test_manifests.device_manifest",
]


def test_public_api_and_tooling_do_not_import_torch() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {TORCH_FREE!r}: importlib.import_module(name)\n"
        "from test_manifests import load_manifests, merge_manifests, resolve, shipped_manifests, template_scope\n"
        "m = merge_manifests(load_manifests(shipped_manifests()))\n"
        "template_scope(m, 'test/test_ops.py', 'TestCommon', 'test_noncontiguous_samples').allows('add', 'float16')\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
