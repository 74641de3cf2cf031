"""A frozen label database in a real browser: the app's labels live in PostgreSQL,
frozen with SIGSTOP mid-session (as behind a network partition). The key press
comes back with a message and a Try again button; once the server resumes, Try
again brings the labelling panel back where it was, without a reload and without
asking the reviewer's name again, and the next key press is saved."""

from __future__ import annotations

import pytest
from conftest import PATIENCE_MS, running_streamlit
from playwright.sync_api import expect
from postgres_server import PostgresServer
from st_browser import wait_idle, widget
from waiting import wait_for

pytestmark = pytest.mark.e2e

REVIEWER = "ana-frozen"
# What the page says while the label store holds off a server that stopped answering
# (it asks again once its 3 s timeout has passed).
HOLDING_OFF = "memlens asks it again after that"


@pytest.fixture
def postgres():
    server = PostgresServer().start()
    yield server
    server.stop()


def press(page, key: str) -> None:
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)
    wait_idle(page)


def test_the_label_panel_recovers_from_a_frozen_database_without_a_reload(tmp_path, browser, postgres):
    data = tmp_path / "data"
    data.mkdir()
    with running_streamlit(data, tmp_path / "streamlit.log", {"MEMLENS_LABELS_URL": postgres.new_database()}) as app:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(PATIENCE_MS)
        page = context.new_page()
        page.goto(app.url + "/label")
        wait_idle(page, timeout=240_000)
        widget(page, "label_reviewer_input").locator("input").fill(REVIEWER)
        page.get_by_role("button", name="Start labelling").click()
        wait_idle(page)
        widget(page, "log_read").locator("button").click()
        wait_idle(page)
        widget(page, "session_name").locator("input").fill("frozen-e2e")
        widget(page, "sample_size").locator("input").fill("4")
        page.get_by_role("button", name="Create session").click()
        wait_idle(page)
        progress = page.get_by_test_id("stProgress")
        expect(progress).to_contain_text(f"0 of 4 rows done by {REVIEWER}")
        press(page, "1")
        expect(progress).to_contain_text("1 of 4 rows done")

        postgres.freeze()
        try:
            press(page, "2")
            expect(page.get_by_test_id("stAlert").filter(has_text="did not answer within 3 s").first).to_be_visible()
            expect(widget(page, "label_retry")).to_be_visible()
        finally:
            postgres.thaw()

        def try_again() -> bool:
            """Try again, as the reviewer does; True once the store asked the server."""
            widget(page, "label_retry").get_by_role("button", name="Try again").click()
            wait_idle(page)
            return page.get_by_test_id("stAlert").filter(has_text=HOLDING_OFF).count() == 0

        wait_for(try_again, timeout_s=30, what="the label store asking the resumed server again")
        expect(progress).to_contain_text(f"1 of 4 rows done by {REVIEWER}")  # back where it was
        expect(widget(page, "label_reviewer_input")).to_have_count(0)  # the name is not asked again
        press(page, "2")
        expect(progress).to_contain_text("2 of 4 rows done")
        assert page.locator("[data-testid=stException]").count() == 0
        context.close()
        assert "Traceback" not in (tmp_path / "streamlit.log").read_text()
