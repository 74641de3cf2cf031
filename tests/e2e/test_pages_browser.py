"""Every page in the app's navigation opens in a real browser without an error, and
leaves a screenshot in tests/e2e/artifacts/screenshots/ (docs/screenshots/ with
MEMLENS_UPDATE_SCREENSHOTS=1). The pages are read from dashboard/views/navigation.py,
so a page added there is covered here without touching this file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect
from st_browser import open_app, screenshot

pytestmark = pytest.mark.e2e

APP = Path(__file__).resolve().parents[2] / "dashboard" / "views" / "navigation.py"
PAGES = re.findall(r'st\.Page\([^)]*?title="([^"]+)"[^)]*?url_path="([^"]+)"', APP.read_text(encoding="utf-8"))


def test_the_navigation_lists_every_page(page):
    assert len(PAGES) >= 2, PAGES  # the pattern still finds the pages in navigation.py
    open_app(page)
    links = page.get_by_test_id("stSidebarNav").get_by_role("link")
    expect(links).to_have_count(len(PAGES))
    # A link's text is its icon's name (a Material Symbols ligature) and then its title.
    assert [text.split("\n")[-1].strip() for text in links.all_inner_texts()] == [title for title, _ in PAGES]


@pytest.mark.parametrize("title, url_path", PAGES, ids=[path for _, path in PAGES])
def test_each_page_opens_without_an_error(page, screenshots, title, url_path):
    open_app(page, url_path)
    main = page.get_by_test_id("stMain")
    expect(main.locator("h1").first).to_be_visible()
    # The page's own link is the current one in the sidebar.
    current = page.get_by_test_id("stSidebarNav").get_by_role("link", name=title)
    expect(current).to_have_attribute("aria-current", "page")
    assert main.get_by_test_id("stException").count() == 0
    errors = main.get_by_test_id("stAlertContentError")
    assert errors.count() == 0, errors.all_inner_texts()
    assert "Traceback" not in main.inner_text()
    screenshot(page, screenshots / f"page-{url_path}.png")
