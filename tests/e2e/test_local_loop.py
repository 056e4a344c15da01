"""What `make serve` shows a new user: the relay's built-in local target, no GitHub at all.

The relay runs with relay/example.yaml (only the port, the store and the scratch paths moved
into tmp_path); the demo upstream is built with `spyre-ci ci demo`; the two demo PR webhooks
are sent with `spyre-ci relay send-test-event`, exactly as the README says. The local target
runs the workflow's steps on this machine and calls back with a token from the relay's own
issuer; the dashboard ends with a green cell for PR #101 and a red one for PR #102.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.local_demo import LOCAL, completed_cells, example_config
from tests.support.local_demo import spyre_ci as _spyre_ci
from tests.support.relay_server import RelayServer, free_port
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_make_serve_demo_shows_the_whole_loop(tmp_path: Path) -> None:
    demo = _spyre_ci("ci", "demo", "--dir", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr
    assert "PR #102 (breaks add)" in demo.stdout
    port = free_port()
    config = example_config(tmp_path, port)
    with RelayServer(config, with_worker=True, port=port, log_dir=tmp_path) as relay:
        for pr in ("good", "bad"):
            sent = _spyre_ci(
                "relay", "send-test-event", "--config", str(config), "--url", relay.url,
                "--payload", str(tmp_path / "demo" / f"pr-{pr}.pull_request.json"),
            )  # fmt: skip
            assert sent.returncode == 0, sent.stdout + sent.stderr
            assert sent.stdout.startswith("202 "), sent.stdout

        def both_done() -> dict[int, dict[str, Any]] | None:
            cells = completed_cells(relay.url)
            return cells if len(cells) == 2 else None

        try:
            cells = wait_until(both_done, 150, "both demo PRs completed on the dashboard", 1.0)
        except AssertionError:
            logs = "\n".join(p.read_text() for p in (tmp_path / "local-runs").glob("*/run.log"))
            raise AssertionError(f"local runs did not complete:\n{logs}\n{relay.log()}") from None
        page = httpx.get(f"{relay.url}/crcr/{LOCAL}", timeout=10).text

    assert (cells[101]["conclusion"], cells[101]["tests"]["passed"]) == ("success", 2)
    assert (cells[102]["conclusion"], cells[102]["tests"]["failed"]) == ("failure", 2)
    assert cells[101]["selection_id"] and cells[102]["selection_id"]
    assert "state-failure" in page and "state-success" in page
    runs = sorted((tmp_path / "local-runs").glob("*/run.log"))
    assert len(runs) == 2  # one run per PR, none started twice
