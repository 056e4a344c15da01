"""The dashboard in a real headless Chromium, against a relay seeded through its real
webhook and callback endpoints. Screenshots land in test-artifacts/dashboard/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.conftest import SeededRelay
from tests.dashboard.seeding import (
    L1_REPO,
    L2_REPO,
    L4_REPO,
    PR_NUMBER,
    PR_TITLE,
    RESULTS_REPO,
    SHA_OPENED,
    SHA_SYNC,
    SUSPECT_CHANGE,
    TEST_ADD,
    TEST_MUL,
    XSS_CAUSE,
    XSS_JOB,
    XSS_MESSAGE,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh context per test; a JavaScript dialog (an XSS payload firing), a page error
    or a console error (a CSP violation by our own pages, a missing file) fails it."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    dialogs: list[str] = []
    errors: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    def on_console(message: Any) -> None:
        if message.type == "error":
            errors.append(f"{tab.url}: {message.text}")

    tab.on("dialog", on_dialog)
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", on_console)
    tab.errors = errors  # the selection report's own blocked script is expected there
    yield tab
    context.close()
    assert dialogs == [], f"a script ran: {dialogs}"
    assert errors == [], f"page errors: {errors}"


def _no_injected_script_ran(tab: Any) -> None:
    assert tab.evaluate("() => window.__xss === undefined"), "an injected script ran"


def _shot(tab: Any, artifacts: Path, name: str) -> None:
    tab.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)


def test_click_through_overview_backend_change_report(
    page: Any, seeded_relay: SeededRelay, artifacts: Path
) -> None:
    tab = page
    tab.goto(f"{seeded_relay.url}/crcr")
    headings = tab.locator("section.level-group h2").all_inner_texts()
    assert [h.split()[0] for h in headings] == ["L4", "L2", "L1"]
    l4_row = tab.locator("section.level-group").nth(0).locator("tbody tr")
    assert l4_row.count() == 1
    row_text = l4_row.inner_text()
    assert L4_REPO in row_text and "83.3 %" in row_text and "5/6" in row_text
    l1_text = tab.locator("section.level-group").nth(2).inner_text()
    assert L1_REPO in l1_text and "dispatch only" in l1_text
    health = tab.locator("section.health").inner_text()
    assert "Dead letters\n0" in health and "Last webhook" in health
    assert "ago" in health or "just now" in health
    _shot(tab, artifacts, "01-overview")

    tab.get_by_role("link", name=L4_REPO).click()
    tab.wait_for_url(f"**/crcr/{L4_REPO}")
    assert tab.locator("h1").inner_text().startswith(L4_REPO)
    grid = tab.locator("table.grid")
    columns = grid.locator("thead th.job").all_inner_texts()
    assert f"spyre-ci / {XSS_JOB}" in columns  # the job name, shown as text
    rows = grid.locator("tbody tr")
    assert rows.count() == 3
    assert rows.nth(0).locator("th").inner_text().startswith("push")
    assert rows.nth(2).locator("th").inner_text().startswith(f"PR #{PR_NUMBER}")
    assert rows.nth(2).locator(".chip.state-failure").count() == 1
    # The evil URL of test (2/2) is not a link; the repository's own run URLs are.
    hrefs = grid.locator("a.run-link").evaluate_all("els => els.map(e => e.href)")
    assert len(hrefs) == 5  # 6 jobs reported, one with a foreign URL
    assert all(h.startswith(f"https://github.com/{L4_REPO}/actions/runs/") for h in hrefs)
    details = grid.locator("a.cell-link").evaluate_all("els => els.map(e => e.href)")
    assert len(details) == 6 and all("/crcr/deliveries/" in h for h in details)
    _no_injected_script_ran(tab)
    _shot(tab, artifacts, "02-backend")

    # Filters are a plain GET form: they work without JavaScript too.
    tab.select_option("select[name=conclusion]", "failure")
    tab.get_by_role("button", name="Filter").click()
    tab.wait_for_url("**conclusion=failure**")
    assert tab.locator("table.grid tbody tr").count() == 1
    _shot(tab, artifacts, "03-backend-failures")

    # A cell leads to that job's details: this delivery, this backend only.
    tab.locator("table.grid a.cell-link:has(.state-failure)").click()
    tab.wait_for_url("**/crcr/deliveries/**")
    details = tab.locator("section.backend")
    assert details.locator("h2 a").all_inner_texts() == [L4_REPO]
    failing = details.locator("tr", has_text="test (2/2)")
    assert "failure" in failing.inner_text() and "10 ✗" in failing.inner_text()
    _shot(tab, artifacts, "04a-job-details")
    tab.go_back()

    tab.locator("table.grid tbody tr th a").first.click()
    tab.wait_for_url(f"**/crcr/pr/{PR_NUMBER}")
    upstream = tab.locator("p.upstream")
    assert PR_TITLE in upstream.inner_text() and upstream.locator("img").count() == 0
    assert upstream.get_by_role("link").get_attribute("href") == (
        f"https://github.com/Codertocat/Hello-World/pull/{PR_NUMBER}"
    )
    sections = tab.locator("section.backend")
    assert sections.locator("h2 a").all_inner_texts() == [L4_REPO, L2_REPO, RESULTS_REPO, L1_REPO]
    l4 = sections.nth(0)
    assert XSS_JOB in l4.inner_text()
    assert "940 ✓" in l4.inner_text()
    stages = l4.locator("ol.stages li").all_inner_texts()
    assert [s.split()[-1] for s in stages] == ["41", "3120", "1210", "943"]
    causes = l4.locator("ul.causes li").all_inner_texts()
    assert causes[0].startswith("aten/src/ATen/native/BinaryOps.cpp")
    assert causes[1].startswith(XSS_CAUSE)  # shown literally, not as an <img>
    assert l4.locator("img").count() == 0
    assert "kept elementwise" in l4.locator("blockquote.rationale").inner_text()
    assert tab.locator('a[href*="evil.example"]').count() == 0
    assert "L1 is dispatch only" in sections.nth(3).inner_text()
    _no_injected_script_ran(tab)
    _shot(tab, artifacts, "04b-pr")

    assert tab.errors == []
    # The selection's own page links back to its run and backend, and to the full report.
    l4.get_by_role("link", name="selection report").click()
    tab.wait_for_url("**/selection/**")
    lede = tab.locator("p.lede")
    assert (
        lede.get_by_role("link", name="this run")
        .get_attribute("href")
        .startswith("/crcr/deliveries/")
    )
    assert tab.locator("p.crumbs").get_by_role("link", name=L4_REPO).count() == 1
    _shot(tab, artifacts, "05a-selection-page")
    with tab.expect_response(lambda r: "/selection-html/" in r.url) as answer:
        lede.get_by_role("link", name="Full report").click()
    assert "sandbox" in answer.value.headers["content-security-policy"]
    assert tab.locator("h1").inner_text() == "Selection report"
    # The report's own <script> (which would retitle the page) was blocked by the sandbox.
    assert tab.title() == "Selection report"
    assert all("sandboxed" in e or "Content Security Policy" in e for e in tab.errors)
    tab.errors.clear()
    _shot(tab, artifacts, "05b-selection-report")


def test_metrics_and_readiness_pages(page: Any, seeded_relay: SeededRelay, artifacts: Path) -> None:
    tab = page
    tab.goto(f"{seeded_relay.url}/crcr/metrics?days=7")
    charts = tab.locator("svg.chart")
    assert charts.count() == 3
    assert tab.locator("ul.legend-series li").all_inner_texts() == [L4_REPO, L2_REPO, RESULTS_REPO]
    # Today has data for every backend: one point per backend per chart.
    assert charts.nth(0).locator("circle").count() == 3
    _shot(tab, artifacts, "06-metrics")

    tab.get_by_role("link", name="L3 readiness").click()
    rows = tab.locator("table.readiness tbody tr")
    assert rows.count() == 4
    l2 = rows.nth(1).inner_text()
    assert L2_REPO in l2 and "66.7 %" in l2 and "33.3 %" in l2
    _shot(tab, artifacts, "07-readiness")


def test_pages_read_without_javascript(browser: Any, seeded_relay: SeededRelay) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        tab = context.new_page()
        for path in ("/crcr", f"/crcr/{L4_REPO}", f"/crcr/pr/{PR_NUMBER}", "/crcr/metrics"):
            tab.goto(f"{seeded_relay.url}{path}")
            assert L4_REPO in tab.locator("main").inner_text(), path
    finally:
        context.close()


def test_empty_and_unknown_states_say_what_to_do(
    page: Any, seeded_relay: SeededRelay, artifacts: Path
) -> None:
    tab = page
    answer = tab.goto(f"{seeded_relay.url}/crcr/nobody/nothing")
    assert answer.status == 404
    assert "not in the allowlist" in tab.locator("main").inner_text()
    assert len(tab.errors) == 1 and "404" in tab.errors[0]  # Chromium logs the page's own 404
    tab.errors.clear()
    tab.goto(f"{seeded_relay.url}/crcr/pr/999999")
    assert "No backend has run for this change" in tab.locator("main").inner_text()
    tab.goto(f"{seeded_relay.url}/crcr/{L2_REPO}?event=push&conclusion=failure")
    assert "Nothing matches these filters" in tab.locator("main").inner_text()
    _shot(tab, artifacts, "08-empty-filter")


def test_live_refresh_swaps_the_content_without_a_reload(
    page: Any, seeded_relay: SeededRelay
) -> None:
    tab = page
    tab.clock.install()
    tab.goto(f"{seeded_relay.url}/crcr")
    tab.evaluate(
        "() => { window.__sameDocument = true; document.getElementById('main').dataset.old = '1'; }"
    )
    with tab.expect_response(
        lambda r: r.request.resource_type == "fetch" and r.url.endswith("/crcr")
    ):
        tab.clock.fast_forward(31_000)
    tab.wait_for_function("() => document.getElementById('main').dataset.old === undefined")
    assert tab.evaluate("() => window.__sameDocument === true"), "the page was reloaded"
    assert L4_REPO in tab.locator("main").inner_text()


def test_red_run_shows_failed_tests_messages_log_suspects_and_links(
    page: Any, seeded_relay: SeededRelay, artifacts: Path
) -> None:
    tab = page
    tab.goto(f"{seeded_relay.url}/crcr")
    row = tab.locator("tr", has_text=RESULTS_REPO)
    assert "33.3 %" in row.inner_text() and "+1 infra" in row.inner_text()

    tab.get_by_role("link", name=RESULTS_REPO).click()
    tab.wait_for_url(f"**/crcr/{RESULTS_REPO}")
    grid = tab.locator("table.grid")
    columns = grid.locator("thead th.job").all_inner_texts()
    assert columns == [
        "upstream-dispatch / report",
        "upstream-dispatch / report (gpu)",
        "upstream-dispatch / test (shard 1)",
        "upstream-dispatch / test (shard 2)",
    ]
    push = grid.locator("tbody tr").nth(0)
    assert push.locator(".chip.state-infra").count() == 1  # the checkout failure
    assert "3/8 steps" in push.inner_text()  # the running job
    assert "Speed up the add kernel" in push.inner_text()  # the commit's title
    stats = tab.locator("dl.stats").inner_text()
    assert "Infrastructure failures (7 d)\n1" in stats and "Flaky tests (7 d)\n1" in stats
    assert TEST_MUL in tab.locator("#flaky-h + ul").inner_text()
    _shot(tab, artifacts, "09-results-backend")

    tab.fill("input[name=q]", "test_add")
    tab.get_by_role("button", name="Search").click()
    tab.wait_for_url("**q=test_add**")
    assert tab.locator("table.grid tbody tr").count() == 1
    assert TEST_ADD in tab.locator("section.matched").inner_text()
    tab.locator("table.grid a.cell-link").first.click()
    tab.wait_for_url("**/crcr/deliveries/**")

    failures = tab.locator("table.failures tbody tr")
    assert failures.count() == 2
    add = failures.nth(0)
    assert XSS_MESSAGE in add.locator("pre.message").inner_text()  # shown as text
    assert "test/test_ops.py:21: AssertionError" in add.inner_text()
    assert SUSPECT_CHANGE in add.locator("td.suspect").inner_text()
    compare = add.locator("td.suspect a").get_attribute("href")
    assert compare.endswith(f"/compare/{SHA_OPENED[:12]}...{SHA_SYNC[:12]}")
    assert add.locator(".history .h").count() == 3
    assert "flaky" in failures.nth(1).inner_text()
    assert "<img" in tab.locator("pre.log").inner_text()  # the log tail, inert
    assert tab.locator("pre.log img").count() == 0
    _no_injected_script_ran(tab)
    _shot(tab, artifacts, "10-run-failures")

    add.locator("td.test-id a").click()
    tab.wait_for_url("**/crcr/test?**")
    assert TEST_ADD in tab.locator("h1").inner_text()
    assert "suspect range" in tab.locator("section.test-backend").inner_text()
    _shot(tab, artifacts, "11-test-history")
    tab.go_back()

    tab.get_by_role("link", name="selection report").first.click()
    tab.wait_for_url("**/selection/**")
    tab.get_by_role("link", name="this run").click()
    tab.wait_for_url("**/crcr/deliveries/**")
    assert tab.locator("table.failures").count() == 1
