"""Fixtures shared by every test area (keep this file small: fixtures live in tests/support/)."""

from tests.support.browser import artifacts, browser
from tests.support.postgres import postgres_server, postgres_url

__all__ = ["artifacts", "browser", "postgres_server", "postgres_url"]
