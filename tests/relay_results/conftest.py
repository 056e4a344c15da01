"""Fixtures of the results tests: the fake GitHub (with result endpoints), OIDC issuer, HUD."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_results import FakeResultsAPI
from tests.support.fake_hud import FakeHud
from tests.support.fake_oidc import FakeOidcIssuer


@pytest.fixture(scope="session")
def oidc() -> Iterator[FakeOidcIssuer]:
    with FakeOidcIssuer() as issuer:
        yield issuer


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def each_store_url(request: pytest.FixtureRequest) -> str | None:
    """The store of a `ResultsLoop`: None (its own SQLite file), then a PostgreSQL database."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def results_api() -> FakeResultsAPI:
    return FakeResultsAPI()


@pytest.fixture
def github(results_api: FakeResultsAPI) -> Iterator[FakeGitHub]:
    with FakeGitHub(routers=(results_api.router,)) as fake:
        yield fake


@pytest.fixture
def hud() -> Iterator[FakeHud]:
    with FakeHud(key="hud-key") as fake:
        yield fake
