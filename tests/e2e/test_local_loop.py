"""What `make serve` shows a new user: the relay's built-in local target, no GitHub at all.

The relay runs with relay/example.yaml (only the port, the store and the scratch paths moved
into tmp_path); the demo upstream is built with `spyre-ci ci demo`; the two demo PR webhooks
are sent with `spyre-ci relay send-test-event`, exactly as the README says. The local target
runs the workflow's steps on this machine and calls back with a token from the relay's own
issuer; the dashboard ends with a green cell for PR #101 and a red one for PR #102.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.relay_server import RelayServer, free_port
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LOCAL = "local/spyre-ci"


def _spyre_ci(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spyre_ci", *args], capture_output=True, text=True, timeout=60
    )


def _example_config(tmp_path: Path, port: int) -> Path:
    """relay/example.yaml with its port, store and scratch directories moved to tmp_path."""
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


def _cells(url: str) -> dict[int | str, dict[str, Any]]:
    """The completed job of each grid row, by PR number (a push: "push")."""
    answer = httpx.get(f"{url}/api/crcr/{LOCAL}", timeout=10)
    if answer.status_code != 200:
        return {}
    found: dict[int | str, dict[str, Any]] = {}
    for row in answer.json()["rows"]:
        for cell in row["cells"]:
            if cell and cell["status"] == "completed" and not cell.get("leg"):
                found[int(row["pr_number"]) if row["pr_number"] else row["event_type"]] = cell
    return found


def test_make_serve_demo_shows_the_whole_loop(
    tmp_path: Path, browser: Any, artifacts: Path
) -> None:
    demo = _spyre_ci("ci", "demo", "--dir", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr
    assert "PR #102 (breaks add)" in demo.stdout
    port = free_port()
    config = _example_config(tmp_path, port)
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
        cells = _cells(relay.url)
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
