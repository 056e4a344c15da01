"""`spyre-ci relay serve` with a bad configuration: one `Error:` line naming the file, line
and field, exit 2 (bad input), never a traceback; unknown `extra` sections are refused
naming the known ones; `send-test-event` checks its payload before sending it."""

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
        [":3:5: extra.dashboard.refresh_secondz", "known: refresh_seconds, warm_cache"],
    ),
    (
        {"targets": [{"name": "local/spyre-ci", "connection": "locl"}]},
        ["targets[local/spyre-ci].connection", "unknown connection 'locl'", "github, local"],
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
    assert result.returncode == 2, result.stderr
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


def test_serve_refuses_a_malformed_file_in_one_line_naming_line_and_column(
    tmp_path: Path,
) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text("webhook_secrets: [s\nstore_url: x\n")
    result = subprocess.run(
        [sys.executable, "-m", "spyre_ci", "relay", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"Error: {config}:2:10: malformed YAML: expected ',' or ']', but got ':'"
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"action": "opened",\n "number": }\n', "{path}:2:12: not JSON: Expecting value"),
        ("[1, 2]", "{path}: must be a JSON object, not a list"),
        (b"\xff\xfe{}", "{path}: not UTF-8 text"),
    ],
)
def test_send_test_event_checks_the_payload_before_sending_it(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    config = write_relay_config(tmp_path)
    payload = tmp_path / "payload.json"
    if isinstance(content, bytes):
        payload.write_bytes(content)
    else:
        payload.write_text(content)
    # Nothing listens on the port: a payload that was sent would fail with "cannot reach"
    # (exit 1); checked first, it is refused as bad input without a connection attempt.
    url = f"http://127.0.0.1:{free_port()}"
    command = ["relay", "send-test-event", "--config", str(config), "--url", url]
    result = subprocess.run(
        [sys.executable, "-m", "spyre_ci", *command, "--payload", str(payload)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0].startswith("Error: " + message.format(path=payload))
    assert "cannot reach" not in result.stderr


@pytest.mark.parametrize("command", ["status", "sweep"])
def test_an_unreachable_store_fails_in_one_line(tmp_path: Path, command: str) -> None:
    # nothing listens on the port: the store cannot be reached (a failure, not bad input)
    url = f"postgresql://relay@127.0.0.1:{free_port()}/relay"
    config = write_relay_config(tmp_path, store_url=url, store_timeout_seconds=1)
    result = subprocess.run(
        [sys.executable, "-m", "spyre_ci", "relay", command, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: relay store {url}: cannot connect"), line
