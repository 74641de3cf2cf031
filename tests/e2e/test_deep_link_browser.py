"""A link to a page other than Inspect, opened first on a server that just started.

Streamlit's legacy mode would run dashboard/views/<page>.py without navigation.py
there: a sidebar of file names ("navigation", "browse", ...) and the narrow layout."""

from urllib.parse import urlencode

import pytest
from conftest import running_streamlit
from playwright.sync_api import expect
from st_browser import wait_idle

pytestmark = pytest.mark.e2e


def test_first_visit_by_deep_link_gets_the_app_navigation(tmp_path, browser):
    (tmp_path / "data").mkdir()
    with running_streamlit(tmp_path / "data", tmp_path / "streamlit.log") as fresh:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto(f"{fresh.url}/calibrate")
        wait_idle(page)
        nav = page.locator("[data-testid=stSidebarNav]")
        nav.get_by_text("Calibrate", exact=True).wait_for()
        links = nav.inner_text()
        assert "Inspect" in links and "Compare" in links
        assert not {"app", "navigation"} & set(links.split())  # the file-name sidebar lists the main script
        page.get_by_text("Calibrate the floor").first.wait_for()
        # The wide layout navigation.py sets: the main block spans most of the window.
        width = page.locator("[data-testid=stMainBlockContainer]").bounding_box()["width"]
        assert width > 900
        context.close()


def test_a_new_server_answers_once_it_is_ready_and_its_first_link_shows_the_result(tmp_path, browser):
    """`streamlit run dashboard/app.py` gets ready before it answers: by the health
    check the model and the default store are open (its log says so), and a shared
    link's first visit shows the result."""
    (tmp_path / "data").mkdir()
    with running_streamlit(tmp_path / "data", tmp_path / "streamlit.log") as fresh:
        start_up = [line for line in fresh.log().splitlines() if "memlens start-up:" in line]
        assert len(start_up) == 1 and "model ready" in start_up[0] and "store ready" in start_up[0], fresh.log()
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto(f"{fresh.url}/?" + urlencode({"query": "What is the user's favourite pizza topping?", "user": "sam"}))
        returned = page.get_by_test_id("stMetric").filter(has_text="Returned").first
        expect(returned).to_contain_text("5", timeout=60_000)
        context.close()
