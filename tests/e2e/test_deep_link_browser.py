"""A link to a page other than Inspect, opened first on a server that just started.

Streamlit's legacy mode would run dashboard/views/<page>.py without app.py there:
a sidebar of file names ("app", "browse", ...) and the narrow layout."""

import pytest
from conftest import running_streamlit
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
        assert "app" not in links.split()  # the file-name sidebar lists the main script as "app"
        page.get_by_text("Calibrate the floor").first.wait_for()
        # The wide layout app.py sets: the main block spans most of the window.
        width = page.locator("[data-testid=stMainBlockContainer]").bounding_box()["width"]
        assert width > 900
        context.close()
