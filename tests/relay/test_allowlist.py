"""The allowlist in pytorch/pytorch's `.github/allowlist.yml` format; errors name the line."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay.allowlist import DEFAULT_EVENTS, AllowlistError, parse_allowlist
from relay.allowlist_source import AllowlistSource, AllowlistUnavailable
from relay.clock import ManualClock

# The shape of pytorch/pytorch's allowlist as published (comments, L3 device map, on-call lists).
UPSTREAM_STYLE = """\
# Cross Repo CI Relay (CRCR) Allowlist
L1:
  - riseproject-dev/pytorch-ci
  - NVIDIA/pytorch-windows-ci

L2:
  - Ascend/pytorch
  - torch-spyre/torch-spyre

L3:
  # Canonical test repos for CRCR.
  crcr-test:
    pytorch/crcr-test: [atalman, can-gaa-hou, fffrog]

L4:
  - org4/downstream-repo4: "@oncall1, @oncall2"
"""


def test_upstream_format_is_parsed_level_by_level() -> None:
    allowlist = parse_allowlist(UPSTREAM_STYLE)
    assert [(e.repo, e.level) for e in allowlist.entries] == [
        ("riseproject-dev/pytorch-ci", "L1"),
        ("NVIDIA/pytorch-windows-ci", "L1"),
        ("Ascend/pytorch", "L2"),
        ("torch-spyre/torch-spyre", "L2"),
        ("pytorch/crcr-test", "L3"),
        ("org4/downstream-repo4", "L4"),
    ]
    stable = allowlist.get("PyTorch/CRCR-test")  # GitHub names are case-insensitive
    assert stable is not None and stable.device == "crcr-test"
    assert stable.oncalls == ("atalman", "can-gaa-hou", "fffrog")
    assert allowlist.get("org4/downstream-repo4").oncalls == ("@oncall1", "@oncall2")  # type: ignore[union-attr]
    assert [e.repo for e in allowlist.repos_for_device("crcr-test")] == ["pytorch/crcr-test"]
    assert all(e.events == DEFAULT_EVENTS for e in allowlist.entries)


def test_events_opt_in_both_spellings() -> None:
    allowlist = parse_allowlist(
        "L2:\n"
        "  - org/a: {oncalls: [x], events: [pull_request, nightly]}\n"
        "  - org/b: [y]\n"
        "    events: [nightly]\n"
    )
    assert allowlist.get("org/a").events == {"pull_request", "nightly"}  # type: ignore[union-attr]
    assert allowlist.get("org/b").events == {"nightly"}  # type: ignore[union-attr]
    assert [e.repo for e in allowlist.targets_for("pull_request")] == ["org/a"]
    assert allowlist.targets_for("push") == []


def test_empty_levels_and_empty_file_are_valid() -> None:
    assert parse_allowlist("").entries == ()
    assert parse_allowlist("L1:\nL3:\n").entries == ()


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("L1:\n  - org/a\nL2:\n  - org/a\n", 4, "org/a is listed at L2 and already at L1 (line 2)"),
        ("L1:\n  - org/a\nL3:\n  dev:\n    ORG/A: [x]\n", 5, "one level only"),
        ("L5:\n  - org/a\n", 1, "unknown level 'L5'"),
        ("L1:\n  - not-a-repo\n", 2, "'not-a-repo' is not owner/repo"),
        ("L2:\n  - org/a: {oncalls: [x], team: y}\n", 2, "unknown key 'team'"),
        ("L2:\n  - org/a: {events: [pull_request, fortnightly]}\n", 2, "unknown event group"),
        ("L3:\n  - org/a\n", 2, "L3 must map a device name"),
        ("L1:\n  - org/a\n  - [broken\n", 4, "not valid YAML"),
        ("L1: org/a\n", 1, "L1 must be a list"),
    ],
)
def test_errors_name_the_line(text: str, line: int, message: str) -> None:
    with pytest.raises(AllowlistError) as caught:
        parse_allowlist(text, "allowlist.yml")
    assert f"allowlist.yml, line {line}:" in str(caught.value)
    assert message in str(caught.value)


def test_file_source_refreshes_at_most_every_interval(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yml"
    path.write_text("L1:\n  - org/a\n")
    clock = ManualClock()
    source = AllowlistSource(str(path), min_refresh_seconds=60, clock=clock)
    assert [e.repo for e in source.current().entries] == ["org/a"]
    path.write_text("L1:\n  - org/b\n")
    import os

    os.utime(path, (time.time() + 5, time.time() + 5))
    clock.advance(30)
    assert [e.repo for e in source.current().entries] == ["org/a"]  # cached
    clock.advance(31)
    assert [e.repo for e in source.current().entries] == ["org/b"]


def test_a_broken_refresh_keeps_the_last_good_allowlist(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yml"
    path.write_text("L1:\n  - org/a\n")
    clock = ManualClock()
    source = AllowlistSource(str(path), min_refresh_seconds=1, clock=clock)
    source.current()
    path.write_text("L1:\n  - org/a\nL2:\n  - org/a\n")
    import os

    os.utime(path, (time.time() + 5, time.time() + 5))
    clock.advance(2)
    assert [e.repo for e in source.current().entries] == ["org/a"]


def test_a_broken_first_load_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.yml"
    path.write_text("L1:\n  - bad\n")
    with pytest.raises(AllowlistUnavailable, match=f"{path}.*line 2"):
        AllowlistSource(str(path)).current()
    with pytest.raises(AllowlistUnavailable, match="line 2"):
        AllowlistSource(str(path)).load()


def test_a_broken_reload_logs_the_reason_once_and_keeps_serving(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "allowlist.yml"
    path.write_text("L1:\n  - org/a\n")
    clock = ManualClock()
    source = AllowlistSource(str(path), min_refresh_seconds=1, clock=clock)
    source.load()
    path.write_text("L1:\n  - org/a\nL5:\n  - org/b\n")
    import os

    os.utime(path, (time.time() + 5, time.time() + 5))
    with caplog.at_level("ERROR", logger="relay.allowlist_source"):
        for _ in range(3):
            clock.advance(2)
            assert [e.repo for e in source.current().entries] == ["org/a"]
    errors = [r.getMessage() for r in caplog.records]
    assert len(errors) == 1, errors
    assert "keeping the last good one" in errors[0]
    assert str(path) in errors[0] and "line 3" in errors[0] and "L5" in errors[0]


def test_serve_refuses_to_start_with_a_bad_allowlist(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.support.relay_server import write_relay_config
    from tests.support.served import free_port

    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L1:\n  - org/a\nL5:\n  - org/b\n")
    config = write_relay_config(tmp_path, allowlist={"source": str(allowlist)})
    command = [sys.executable, "-m", "spyre_ci", "relay", "serve", "--config", str(config)]
    # Bounded: a relay that starts anyway is killed after 60 s and the test fails.
    result = subprocess.run(
        [*command, "--port", str(free_port())], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2  # an allowlist file that cannot be used is bad input
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error:"), result.stderr
    assert str(allowlist) in last and "line 3" in last and "L5" in last
    assert "Traceback" not in result.stderr


@pytest.fixture
def served_allowlist() -> Iterator[tuple[str, list[str], list[str]]]:
    """An allowlist served over loopback HTTP with an ETag; records request headers."""
    body = [b"L2:\n  - org/served\n"]
    seen: list[str] = []
    served: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("If-None-Match") or "")
            etag = f'"{len(body[0])}"'
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.end_headers()
                return
            served.append(etag)
            self.send_response(200)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body[0])))
            self.end_headers()
            self.wfile.write(body[0])

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/allowlist.yml", seen, served
    server.shutdown()
    server.server_close()


def test_url_source_uses_the_etag_and_the_refresh_interval(
    served_allowlist: tuple[str, list[str], list[str]],
) -> None:
    url, seen, served = served_allowlist
    clock = ManualClock()
    source = AllowlistSource(url, min_refresh_seconds=60, clock=clock)
    assert [e.repo for e in source.current().entries] == ["org/served"]
    source.current()
    assert len(seen) == 1  # within the interval: no request
    clock.advance(61)
    assert [e.repo for e in source.current().entries] == ["org/served"]
    assert seen == ["", served[0]] and len(served) == 1  # revalidated, 304


def test_webhook_without_a_loadable_allowlist_says_allowlist_not_store(tmp_path: Path) -> None:
    import json

    from tests.relay.conftest import UPSTREAM, make_config
    from tests.support.relay_server import InProcessRelay, fixture_body, post_webhook

    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_text("L5:\n  - org/b\n")
    config = make_config(f"sqlite:///{tmp_path / 'relay.db'}", allowlist={"source": str(allowlist)})
    payload = json.loads(fixture_body("pull_request.opened"))
    payload["repository"]["full_name"] = UPSTREAM
    with InProcessRelay(config) as relay:
        for _ in range(2):
            response = post_webhook(relay.url, "pull_request", json.dumps(payload).encode())
            assert response.status_code == 503
            assert "allowlist" in response.json()["error"]
            assert "store" not in response.json()["error"]
