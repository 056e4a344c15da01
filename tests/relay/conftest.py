"""Relay test fixtures: a store for each dialect, the fake GitHub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from relay.store import Store, open_store
from tests.support.fake_github import FakeGitHub


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
