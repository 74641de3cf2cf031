"""The Monitor page in headless Chromium: pick an alert window of the demo log and
start a labelling session from exactly its turns (the screenshot for the docs)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from st_browser import open_app, screenshot, wait_idle, widget

pytestmark = pytest.mark.e2e

SESSION = "e2e-monitor-drift"


def test_an_alert_window_starts_a_labelling_session(page, screenshots, server):
    open_app(page, "monitor")
    wait_idle(page)
    expect(page.get_by_text("alert: 2026-01-26: top-1 drift (KS)")).to_be_visible()
    # the chart code loads lazily in the browser: on a busy machine it takes longer than expect's 5 s
    expect(page.locator(".js-plotly-plot")).to_have_count(3, timeout=30_000)
    # 30 windows: type to narrow the list (it only draws the options in view), then pick
    widget(page, "monitor_window").get_by_role("combobox").click()
    page.keyboard.type("2026-01-26")
    page.get_by_role("option", name="2026-01-26 (alert)", exact=True).click()
    wait_idle(page)
    expect(page.get_by_role("heading", name="Turns of 2026-01-26")).to_be_visible()
    name = widget(page, "monitor_session_name").locator("input")
    name.fill(SESSION)
    size = widget(page, "monitor_session_size").locator("input")
    size.fill("40")
    page.get_by_role("button", name="Start a labelling session").click()
    wait_idle(page)
    expect(page.get_by_text(f"Session '{SESSION}' created: 40 rows")).to_be_visible()
    expect(page.get_by_text("of 2026-01-26, stratified by score band")).to_be_visible()
    screenshot(page, screenshots / "monitor.png")
    page.get_by_role("link", name="Label it now").click()
    wait_idle(page)
    expect(page.get_by_role("heading", name="Label a session")).to_be_visible()
