"""One headless Debian Chromium for the whole session, driven by Playwright's sync API.

Session-scoped and defined once (tests/conftest.py): Playwright's sync API runs an event
loop in the thread that started it, so two instances in one session cannot coexist.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

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
