"""Session fixtures of the dashboard tests: a real relay seeded through its real endpoints
(the headless Chromium, `browser` and `artifacts`, is tests/support/browser.py's)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from relay.store import Store, open_store
from tests.dashboard.seeding import ALLOWLIST, Seeded, seed
from tests.support.fake_github import FakeGitHub
from tests.support.fake_oidc import FakeOidcIssuer
from tests.support.relay_server import RelayServer, served_relay_config


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
                store_url = f"sqlite:///{directory / 'relay.db'}"
                yield SeededRelay(
                    server.url, seed(server.url, issuer, github, store_url), server, store_url
                )
            except BaseException:
                print(server.log())
                raise
