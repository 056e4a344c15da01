"""Dashboard pages on bad input and on dispatches that all dead-lettered: pages, not JSON
errors or misleading empty states."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from relay.allowlist_source import StaticAllowlist
from tests.relay.conftest import ALLOWLIST_YAML, dispatching_config, make_config
from tests.support.fake_github import FakeGitHub, Fault
from tests.support.relay_server import InProcessRelay, fixture_body, post_webhook


@pytest.fixture
def static_allowlist() -> StaticAllowlist:
    from relay.allowlist import parse_allowlist

    return StaticAllowlist(parse_allowlist(ALLOWLIST_YAML))


@pytest.fixture
def empty_relay(tmp_path: Path, static_allowlist: StaticAllowlist) -> Iterator[InProcessRelay]:
    config = make_config(
        f"sqlite:///{tmp_path / 'relay.db'}", extra={"dashboard": {"warm_cache": False}}
    )
    with InProcessRelay(config, allowlist=static_allowlist) as relay:
        yield relay


BAD = [
    ("/crcr/metrics?days=31", "days", "1 to 30"),
    ("/crcr/metrics?days=abc", "days", "1 to 30"),
    ("/crcr/org/stable?event=bogus", "event", "pr or push or nightly"),
    ("/crcr/org/stable?conclusion=bogus", "conclusion", "success"),
    ("/crcr/pr/abc", "number", "pull request number"),
    ("/crcr/deliveries/x?repo=not-a-repo", "repo", "owner/name"),
]


@pytest.mark.parametrize(("path", "name", "allowed"), BAD)
def test_bad_parameters_get_an_html_400_naming_them(
    empty_relay: InProcessRelay, path: str, name: str, allowed: str
) -> None:
    response = httpx.get(empty_relay.url + path, timeout=30)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert f"{name}=" in response.text and allowed in response.text
    assert "Content-Security-Policy" in response.headers


def test_good_parameters_still_work(empty_relay: InProcessRelay) -> None:
    for path in ["/crcr/metrics?days=30", "/crcr/org/stable?event=push&conclusion=failure",
                 "/crcr/org/stable?event=&conclusion=", "/crcr/pr/1"]:  # fmt: skip
        assert httpx.get(empty_relay.url + path, timeout=30).status_code == 200, path


def test_a_backend_whose_dispatches_all_dead_lettered_says_so(
    tmp_path: Path, static_allowlist: StaticAllowlist
) -> None:
    with FakeGitHub() as fake:
        config = dispatching_config(
            f"sqlite:///{tmp_path / 'relay.db'}",
            fake,
            worker={"max_attempts": 1},
            extra={"dashboard": {"warm_cache": False}},
        )
        fake.inject(Fault.status_code(502, path="/repos/org/observed/", count=2))
        with InProcessRelay(config, allowlist=static_allowlist) as relay:
            for delivery in ("dl-1", "dl-2"):
                post_webhook(relay.url, "push", fixture_body("push"), delivery_id=delivery)
            relay.worker().run_once(limit=10)
            page = httpx.get(f"{relay.url}/crcr/org/observed", timeout=30)
            data = httpx.get(f"{relay.url}/api/crcr/org/observed", timeout=30).json()
            fine = httpx.get(f"{relay.url}/crcr/org/stable", timeout=30)
    assert page.status_code == 200
    assert "Nothing has been dispatched" not in page.text
    assert "2 dispatches to org/observed" in page.text and "dead-lettered" in page.text
    assert "502" in page.text  # the last error
    assert data["dead_letters"]["count"] == 2
    assert "dead-lettered" not in fine.text
