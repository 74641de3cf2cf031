"""What one browser session carries across pages, in headless Chromium, following
the sidebar's page links as a reviewer does: weights set in Quality's sidebar are
Inspect's (and its address bar's), and one reviewer name is asked once, on Label,
and is the name on Inspect; changed on Inspect, it is Label's again."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from demo_questions import THEME
from playwright.sync_api import expect
from st_browser import ask, go_to, open_app, wait_idle, widget

pytestmark = pytest.mark.e2e

RECENCY_HEAVY = "semantic=0.05,recency=0.95,importance=0,usage=0"


def store_settings(page):
    page.get_by_test_id("stSidebar").get_by_text("Store settings").click()
    return widget(page, "cfg_embedded_weights").locator("input")


def test_weights_and_the_reviewer_name_carry_across_pages(page):
    open_app(page, "quality")
    weights = store_settings(page)
    weights.fill(RECENCY_HEAVY)
    weights.press("Enter")
    wait_idle(page)

    # Label asks who is labelling, once.
    go_to(page, "Label")
    name = widget(page, "label_reviewer_input").locator("input")
    name.fill("dana")
    page.get_by_role("button", name="Start labelling").click()
    wait_idle(page)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text("Labelling as dana")).to_be_visible()

    # Inspect: the same weights and the same reviewer, nothing typed again.
    go_to(page, "Inspect")
    expect(store_settings(page)).to_have_value(RECENCY_HEAVY)
    expect(widget(page, "reviewer").locator("input")).to_have_value("dana")
    ask(page, THEME)
    params = parse_qs(urlsplit(page.url).query)
    assert params["store"] == ["embedded"] and params["weights"] == [RECENCY_HEAVY]
    expect(page.get_by_text("Labels are saved at once by id as reviewer dana.")).to_be_visible()

    # Renamed on Inspect, the Label page labels under the new name, without asking.
    box = widget(page, "reviewer").locator("input")
    box.fill("erin")
    box.press("Enter")
    wait_idle(page)
    go_to(page, "Label")
    expect(sidebar.get_by_text("Labelling as erin")).to_be_visible()
    expect(widget(page, "label_reviewer_input")).to_have_count(0)
    # And back on Quality, the weights are still the ones set there.
    go_to(page, "Quality")
    expect(store_settings(page)).to_have_value(RECENCY_HEAVY)
