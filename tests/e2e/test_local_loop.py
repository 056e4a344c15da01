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


def test_make_serve_demo_shows_the_whole_loop(
    tmp_path: Path, browser: Any, artifacts: Path
) -> None:
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

        cells = _wait_for(relay, tmp_path, 2, "both demo PRs completed on the dashboard")
        # A push of a commit the upstream does not have: the run fails in its checkout.
        pushed = _spyre_ci(
            "relay", "send-test-event", "--config", str(config), "--url", relay.url,
            "--event", "push",
        )  # fmt: skip
        assert pushed.stdout.startswith("202 "), pushed.stdout + pushed.stderr
        cells = _wait_for(relay, tmp_path, 3, "the push completed on the dashboard")
        backend = httpx.get(f"{relay.url}/api/crcr/{LOCAL}", timeout=10).json()
        run_page = f"/crcr/deliveries/{cells[102]['delivery_id']}?repo={LOCAL}"
        red = httpx.get(f"{relay.url}{run_page}", timeout=10)
        red_run = httpx.get(f"{relay.url}/api{run_page}", timeout=10).json()
        page = httpx.get(f"{relay.url}/crcr/{LOCAL}", timeout=10).text
        shot = _screenshot(browser, f"{relay.url}{run_page}", artifacts / "12-demo-red-pr-run.png")

    assert (cells[101]["conclusion"], cells[101]["tests"]["passed"]) == ("success", 2)
    assert (cells[102]["conclusion"], cells[102]["tests"]["failed"]) == ("failure", 2)
    assert cells[101]["selection_id"] and cells[102]["selection_id"]
    assert "state-failure" in page and "state-success" in page
    # PR #102's run page: which tests failed, with the assertion message and the suspect
    (job,) = red_run["backends"][0]["jobs"]
    failed = {f["id"]: f for f in job["failures"]}
    assert sorted(failed) == [
        "test/test_demo_ops.py::TestDemoOpsSPYRE::test_add_spyre_float16",
        "test/test_demo_ops.py::TestDemoOpsSPYRE::test_add_spyre_float32",
    ]
    for failure in failed.values():
        assert failure["message"].startswith("AssertionError: Tensor-likes are not close!")
        assert (
            failure["suspect_change"]["change"] == "test/test_demo_ops.py: reference_add modified"
        )
        assert failure["location"].endswith("test_demo_ops.py:21: AssertionError")
    assert "Tensor-likes are not close!" in job["details"]["log_tail"]["text"]
    assert red.status_code == 200 and "Tensor-likes are not close!" in red.text
    assert "Tensor-likes are not close!" in shot
    # the push: infrastructure, counted apart, the pass rate of the two PRs unchanged
    assert (cells["push"]["state"], cells["push"]["failure_step"]) == (
        "infrastructure", "select / checkout",
    )  # fmt: skip
    assert backend["summary"]["pass_7d"] == {"passed": 1, "decisive": 2, "rate": 0.5}
    assert backend["summary"]["infrastructure_7d"] == 1
    runs = sorted((tmp_path / "local-runs").glob("*/run.log"))
    assert len(runs) == 3  # one run per event, none started twice


def _wait_for(relay: RelayServer, tmp_path: Path, count: int, what: str) -> dict[int | str, Any]:
    def done() -> dict[int | str, dict[str, Any]] | None:
        cells = completed_cells(relay.url)
        return cells if len(cells) == count else None

    try:
        return wait_until(done, 150, what, 1.0)
    except AssertionError:
        logs = "\n".join(p.read_text() for p in (tmp_path / "local-runs").glob("*/run.log"))
        raise AssertionError(f"local runs did not complete:\n{logs}\n{relay.log()}") from None


def _screenshot(browser: Any, url: str, path: Path) -> str:
    """The page in Debian's headless Chromium, as a person opens it: its failures' text (and a PNG)."""
    tab = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        tab.goto(url)
        tab.screenshot(path=str(path), full_page=True)
        return str(tab.locator("table.failures").inner_text())
    finally:
        tab.close()
