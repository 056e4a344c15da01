"""The models, the loader and the resolution never import torch (the selection relies on it)."""

from __future__ import annotations

import subprocess
import sys


def test_public_api_does_not_import_torch() -> None:
    code = (
        "import sys, test_manifests, test_manifests.scope\n"
        "from test_manifests import load_manifest, resolve, template_scope\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd="."
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
