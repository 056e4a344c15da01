"""Session fixtures of the dashboard tests: a real relay seeded through its real endpoints,
and one headless Debian Chromium driven by Playwright."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from relay.store import Store, open_store
from tests.dashboard.seeding import ALLOWLIST, Seeded, seed
from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import RelayServer, served_relay_config

CHROMIUM = os.environ.get("SPYRE_CI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"


@dataclass
class SeededRelay:
    url: str
    seeded: Seeded
    server: RelayServer
    store_url: str


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh, migrated SQLite relay store of the test's own."""
    store = open_store(f"sqlite:///{tmp_path / 'relay.db'}")
    store.migrate()
    yield store
    store.close()


@pytest.fixture(scope="session")
def seeded_relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeededRelay]:
    directory = tmp_path_factory.mktemp("dashboard-relay")
    with FakeOidcIssuer() as issuer, FakeGitHub() as github:
        config = served_relay_config(
            directory,
            ALLOWLIST,
            github_url=github.url,
            oidc_url=issuer.url,
            callbacks={"status_reporting": "none"},
        )
        with RelayServer(config, with_worker=True) as server:
            try:
                yield SeededRelay(
                    server.url,
                    seed(server.url, issuer, github),
                    server,
                    f"sqlite:///{directory / 'relay.db'}",
                )
            except BaseException:
                print(server.log())
                raise


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make sysdeps` (Debian's chromium package)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    # Not emptied first: under xdist several sessions may write here at once.
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
