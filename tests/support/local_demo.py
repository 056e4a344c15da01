"""The `make serve` demo in a scratch directory: relay/example.yaml moved there, and the
completed cells of the local target on the dashboard (the end-to-end test and
bench/bench_demo.py drive the same loop)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[2]
LOCAL = "local/spyre-ci"


def spyre_ci(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spyre_ci", *args], capture_output=True, text=True, timeout=timeout
    )


def example_config(tmp_path: Path, port: int) -> Path:
    """relay/example.yaml with its port, store and scratch directories moved to tmp_path
    (the demo upstream is expected in tmp_path/demo, as `spyre-ci ci demo --dir` writes it)."""
    text = (ROOT / "relay" / "example.yaml").read_text().replace(":8080", f":{port}")
    config: dict[str, Any] = yaml.safe_load(text)
    config["store_url"] = f"sqlite:///{tmp_path / 'relay.db'}"
    config["allowlist"]["source"] = str(ROOT / config["allowlist"]["source"])
    (target,) = config["targets"]
    options = target["options"]
    options["upstream_url"] = str(tmp_path / "demo" / "upstream")
    options["manifests"] = [str(tmp_path / "demo" / "demo_manifest.yaml")]
    options["workdir"] = str(tmp_path / "local-runs")
    options["oidc_key_path"] = str(tmp_path / "local-oidc.pem")
    path = tmp_path / "relay.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def completed_cells(url: str) -> dict[int | str, dict[str, Any]]:
    """The local target's completed job of each grid row (not a shard's leg), by PR number
    (a push: its event type, "push")."""
    answer = httpx.get(f"{url}/api/crcr/{LOCAL}", timeout=10)
    if answer.status_code != 200:
        return {}
    found: dict[int | str, dict[str, Any]] = {}
    for row in answer.json()["rows"]:
        for cell in row["cells"]:
            if cell and cell["status"] == "completed" and not cell.get("leg"):
                key = int(row["pr_number"]) if row["pr_number"] else row["event_type"]
                found[key] = cell
    return found
