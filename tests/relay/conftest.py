"""Relay test fixtures: a store for each dialect, the fake GitHub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relay.allowlist import parse_allowlist
from relay.allowlist_source import StaticAllowlist
from relay.config import RelayConfig
from relay.store import Store, open_store
from tests.support.fake_github import FakeGitHub
from tests.support.relay_server import TEST_SECRET, InProcessRelay


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated store, once on a SQLite file and once on the real PostgreSQL server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'relay.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    opened = open_store(url)
    opened.migrate()
    yield opened
    opened.close()


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


UPSTREAM = "Codertocat/Hello-World"  # the repository of the fixture payloads
ALLOWLIST_YAML = """\
L1:
  - org/onboarding
L2:
  - org/observed: "alice, bob"
L3:
  spyre:
    org/stable: [carol]
"""


def make_config(store_url: str, **fields: Any) -> RelayConfig:
    data: dict[str, Any] = {
        "upstream_repo": UPSTREAM,
        "webhook_secrets": [TEST_SECRET],
        "store_url": store_url,
        **fields,
    }
    return RelayConfig.model_validate(data)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'relay.db'}"


@pytest.fixture
def allowlist() -> StaticAllowlist:
    return StaticAllowlist(parse_allowlist(ALLOWLIST_YAML))


def dispatching_config(store_url: str, fake: FakeGitHub, **fields: Any) -> RelayConfig:
    """A config whose GitHub is the fake (token auth, no pacing) and whose retries are fast."""
    github = {
        "api_url": fake.url,
        "token": "test-token",
        "min_write_interval_seconds": 0,
        # Long enough that a loaded CI machine does not time out a normal answer; the
        # timeout test sets its own.
        "timeout_seconds": 10.0,
        **fields.pop("github", {}),
    }
    worker = {
        "backoff_base_seconds": 0.05,
        "backoff_max_seconds": 0.2,
        "max_attempts": 3,
        "lease_seconds": 15,  # must exceed the GitHub timeout
        **fields.pop("worker", {}),
    }
    return make_config(store_url, github=github, worker=worker, **fields)


@pytest.fixture
def relay(sqlite_url: str, allowlist: StaticAllowlist) -> Iterator[InProcessRelay]:
    """A relay app on real uvicorn (SQLite), without a worker."""
    with InProcessRelay(make_config(sqlite_url), allowlist=allowlist) as server:
        yield server


@pytest.fixture
def dispatching_relay(
    sqlite_url: str, allowlist: StaticAllowlist, fake_github: FakeGitHub
) -> Iterator[InProcessRelay]:
    """A relay (SQLite) whose worker dispatches to the fake GitHub."""
    with InProcessRelay(dispatching_config(sqlite_url, fake_github), allowlist=allowlist) as server:
        yield server


@pytest.fixture
def dispatching_relay_each_store(
    store: Store, allowlist: StaticAllowlist, fake_github: FakeGitHub
) -> Iterator[InProcessRelay]:
    """The same, once on SQLite and once on PostgreSQL."""
    config = dispatching_config(store.url, fake_github)
    with InProcessRelay(config, allowlist=allowlist, store=store) as server:
        yield server
