"""`spyre-ci relay serve` with a bad configuration: one `Error:` line naming the field,
never a traceback; unknown `extra` sections are refused naming the known ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.relay_server import write_relay_config
from tests.support.served import free_port

CASES: list[tuple[dict[str, Any], list[str]]] = [
    (
        {"extra": {"dashboard": {"refresh_secondz": 5}}},
        ["extra.dashboard.refresh_secondz"],
    ),
    (
        {"extra": {"callbacks": {"rate_per_second": "fast"}}},
        ["extra.callbacks.rate_per_second"],
    ),
    (
        {"extra": {"calbacks": {"hud_url": "https://hud.example"}}},
        ["extra.calbacks", "unknown", "callbacks", "dashboard"],
    ),
    (
        {
            "targets": [
                {
                    "name": "local/spyre-ci",
                    "connection": "local",
                    "options": {"upstream_url": "/tmp/x", "workdr": "/tmp/w"},
                }
            ]
        },
        ["targets[local/spyre-ci].options.workdr"],
    ),
]


@pytest.mark.parametrize(("fields", "named"), CASES)
def test_serve_reports_a_bad_setting_in_one_line(
    tmp_path: Path, fields: dict[str, Any], named: list[str]
) -> None:
    config = write_relay_config(tmp_path, **fields)
    command = [sys.executable, "-m", "spyre_ci", "relay", "serve", "--config", str(config)]
    # Bounded: a relay that starts anyway is killed after 60 s and the test fails.
    result = subprocess.run(
        [*command, "--port", str(free_port())], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.stderr
    for part in named:
        assert part in lines[0], (part, lines[0])


def test_load_config_refuses_an_unknown_extra_section(tmp_path: Path) -> None:
    from relay.config import ConfigError, load_config

    config = write_relay_config(tmp_path, extra={"dashbaord": {}})
    with pytest.raises(ConfigError, match=r"extra\.dashbaord: unknown section"):
        load_config(config, environ={})
