"""With a password configured, every page and every deep link shows the password
form and nothing else: no page content, no store's result, no label database opened."""

from __future__ import annotations

import pytest
from conftest import running_streamlit
from st_browser import wait_idle

pytestmark = pytest.mark.e2e

PASSWORD = "pw-Gate-7731"
# Each page by deep link (shared links carry parameters), and what it shows once unlocked.
LINKS = [
    ("inspect?query=Which+UI+theme+does+the+user+prefer%3F&user=sam", "Inspect a retrieval"),
    ("calibrate", "Calibrate the floor"),
    ("label", "Label a session"),
    ("quality", "Retrieval quality"),
    ("browse", "Browse a store"),
    ("compare", "Compare two stores"),
    ("", "Inspect a retrieval"),
]


def test_every_page_and_deep_link_is_behind_the_password(tmp_path, browser):
    data = tmp_path / "data"
    data.mkdir()
    with running_streamlit(data, tmp_path / "streamlit.log", {"MEMLENS_PASSWORD": PASSWORD}) as gated:
        # The server's start-up, before any visitor, opened the default store
        # (dashboard/ui/widgets/start_up.py): the demo store's files, and nothing else.
        at_start = sorted(p.name for p in data.iterdir())
        assert "demo.sqlite" in at_start and not any(name.startswith("labels") for name in at_start), at_start
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        for link, title in LINKS:
            page.goto(f"{gated.url}/{link}")
            wait_idle(page)
            page.get_by_text("Enter the memlens password to continue").wait_for()
            main = page.locator("[data-testid=stMain]").inner_text()
            assert title not in main, link
            assert page.locator(".st-key-store").count() == 0, link  # no store picker
            assert page.locator("[data-testid=stDataFrame]").count() == 0, link
            # A shared link's first view draws its hits as a Markdown table: none either.
            assert page.locator("[data-testid=stMarkdownContainer] table").count() == 0, link
        # Nothing behind the gate wrote anything: no label database, no read log.
        assert sorted(p.name for p in data.iterdir()) == at_start
        page.locator("input[type=password]").fill("wrong")
        page.get_by_role("button", name="Unlock").click()
        page.get_by_text("Wrong password.").wait_for()
        page.locator("input[type=password]").fill(PASSWORD)
        page.get_by_role("button", name="Unlock").click()
        page.get_by_text("Inspect a retrieval").first.wait_for()
        page.locator("[data-testid=stSidebarNav]").get_by_text("Calibrate", exact=True).click()
        page.get_by_text("Calibrate the floor").first.wait_for()
        assert PASSWORD not in (tmp_path / "streamlit.log").read_text()
        context.close()
