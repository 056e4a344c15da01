"""Server-side rendering: SVG charts escape what they print; empty stores read helpfully."""

from __future__ import annotations

import time
from pathlib import Path

from relay.dashboard import views
from relay.dashboard.charts import Series, line_chart
from relay.dashboard.render import render
from relay.dashboard.rollup import Rollups
from relay.store import open_store


def _chart(series: list[Series]) -> str:
    return str(line_chart("t", series, (0.0, 4.0), None, lambda v: f"{v:g}", lambda x: f"d{x:g}"))


def test_chart_escapes_series_names_and_breaks_lines_at_gaps() -> None:
    svg = _chart([Series("<script>alert(1)</script>", [(0, 1.0), (1, 2.0), (2, None), (3, 4.0)])])
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert svg.count("<polyline") == 2  # (0,1)-(1,2), then (3,4) alone
    assert svg.count("<circle") == 3


def test_chart_without_data_still_draws_axes() -> None:
    svg = _chart([Series("a", [(0, None), (1, None)])])
    assert "<polyline" not in svg and svg.count('class="grid"') == 5


def test_an_empty_relay_says_what_to_do(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'relay.db'}")
    store.migrate()
    try:
        with store.transaction(write=False) as tx:
            page = views.overview(tx, time.time(), Rollups())
    finally:
        store.close()
    assert page["levels"] == []
    html = render("overview.html.j2", page, nav="overview", api_url="/api/crcr", refresh_seconds=0)
    assert "No downstream results yet" in html
    assert "Is the callback action configured?" in html
    assert "is the GitHub App's webhook pointed here?" in html


def test_bad_dashboard_settings_name_the_field() -> None:
    import pytest

    from relay.config import ConfigError
    from relay.dashboard.app import dashboard_settings

    assert dashboard_settings({}).refresh_seconds == 30
    with pytest.raises(ConfigError, match=r"extra\.dashboard\.refresh_seconds"):
        dashboard_settings({"dashboard": {"refresh_seconds": -1}})
    with pytest.raises(ConfigError, match=r"extra\.dashboard\.colour"):
        dashboard_settings({"dashboard": {"colour": "blue"}})
