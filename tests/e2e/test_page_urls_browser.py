"""Every page's own URL, opened on a server that is already serving other sessions,
lands on that page with no "Page not found" dialog; the shared-link form `/?query=...`
still lands on Inspect with the query restored.

Streamlit serves the default page at `/`, so without care `/inspect` names no page
and Streamlit answers with its "Page not found" dialog over the Inspect page."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from demo_questions import PIZZA
from playwright.sync_api import Page, expect
from st_browser import FIRST_RESULT_TIMEOUT_MS, open_app, wait_idle, widget

pytestmark = pytest.mark.e2e

# (URL path, title in the navigation, the page script's st.title)
PAGES = [
    ("inspect", "Inspect", "Inspect a retrieval"),
    ("calibrate", "Calibrate", "Calibrate the floor"),
    ("label", "Label", "Label a session"),
    ("quality", "Quality", "Retrieval quality"),
    ("browse", "Browse", "Browse a store"),
    ("compare", "Compare", "Compare two stores"),
    ("monitor", "Monitor", "Monitor the floor"),
]


def assert_no_page_not_found(page: Page) -> None:
    # The dialog is drawn after the run that resolves the page: the run is over by now.
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_text("Page not found")).to_have_count(0)


def current_link(page: Page) -> str:
    link = page.get_by_test_id("stSidebarNav").locator("a[aria-current=page]")
    expect(link).to_have_count(1)
    return link.inner_text().split("\n")[-1].strip()


@pytest.fixture
def running(page: Page) -> Page:
    """The shared server with a session already open on it (the page at `/`), so the
    link under test is not the first request the server has seen."""
    open_app(page)
    expect(page.get_by_test_id("stSidebarNav")).to_be_visible()
    return page


@pytest.mark.parametrize("url_path, title, heading", PAGES, ids=[p for p, _, _ in PAGES])
def test_a_page_url_opens_that_page_without_the_page_not_found_dialog(running, browser, server, url_path, title, heading):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        tab = context.new_page()
        tab.goto(f"{server.url}/{url_path}")
        wait_idle(tab, timeout=FIRST_RESULT_TIMEOUT_MS)
        expect(tab.get_by_test_id("stMain").locator("h1").first).to_have_text(heading)
        assert_no_page_not_found(tab)
        assert current_link(tab) == title
        # Still no dialog once the page has settled (it used to appear with the first run).
        tab.wait_for_timeout(1000)
        assert_no_page_not_found(tab)
    finally:
        context.close()


def test_the_shared_link_form_still_restores_the_inspect_view(running):
    open_app(running, params={"query": PIZZA, "user": "sam", "k": "5"})
    expect(widget(running, "query").locator("input")).to_have_value(PIZZA)
    expect(running.get_by_test_id("stCode").first).to_be_visible(timeout=120_000)
    assert_no_page_not_found(running)
    assert current_link(running) == "Inspect"
    assert urlsplit(running.url).path == "/"


def test_the_inspect_url_keeps_the_query_of_a_link(running):
    open_app(running, "inspect", params={"query": PIZZA, "user": "sam", "k": "5"})
    expect(widget(running, "query").locator("input")).to_have_value(PIZZA)
    expect(running.get_by_test_id("stCode").first).to_be_visible(timeout=120_000)
    assert_no_page_not_found(running)
    assert current_link(running) == "Inspect"
