"""Store settings never run code a visitor types: with the password gate passed, a
visitor picks the LangGraph store and types `os:abort` as its factory. The server
keeps running and the page says the factory is not one the operator allowed; the
factory the operator configured is offered and answers."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest
from conftest import PATIENCE_MS, ROOT, running_streamlit
from playwright.sync_api import expect
from st_browser import ask, choose, wait_idle, widget

pytestmark = pytest.mark.e2e

PASSWORD = "pw-Factory-2291"
FACTORY = "langgraph_factory:demo_store"


def test_a_typed_factory_is_refused_and_the_server_survives(tmp_path, browser):
    data = tmp_path / "data"
    data.mkdir()
    settings = {
        "MEMLENS_PASSWORD": PASSWORD,
        "MEMLENS_LANGGRAPH_FACTORY": FACTORY,
        # where the operator's factory module lives
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(Path(ROOT) / "tests" / "connectors"), os.environ.get("PYTHONPATH", "")]),
    }
    with running_streamlit(data, tmp_path / "streamlit.log", settings) as app:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(PATIENCE_MS)
        page = context.new_page()
        page.goto(app.url)
        wait_idle(page)
        page.locator("input[type=password]").fill(PASSWORD)
        page.get_by_role("button", name="Unlock").click()
        page.get_by_text("Inspect a retrieval").first.wait_for()
        wait_idle(page, timeout=240_000)

        choose(page, "store", "LangGraph store")
        page.get_by_test_id("stSidebar").get_by_text("Store settings").click()
        factory = widget(page, "cfg_langgraph_factory")
        expect(factory.get_by_role("combobox")).to_have_value(FACTORY)  # the operator's factory is offered
        factory.get_by_role("combobox").click()
        page.keyboard.type("os:abort")
        page.keyboard.press("Enter")
        wait_idle(page)

        expect(page.get_by_test_id("stAlert").filter(has_text="is not one the operator allowed").first).to_be_visible()
        assert app.process.poll() is None, "the server exited"
        with urllib.request.urlopen(app.url + "/_stcore/health", timeout=5) as health:
            assert health.read().strip() == b"ok"

        # The configured factory still opens and answers. The refused name can stay in the
        # box as its list's filter (it hid the configured one from the list under load):
        # cleared first, as a person would.
        widget(page, "cfg_langgraph_factory").get_by_role("combobox").click()
        page.keyboard.press("Control+A")
        page.keyboard.press("Backspace")
        page.get_by_role("option", name=FACTORY, exact=True).click()
        wait_idle(page)
        choose(page, "user", "sam")  # the store lists its users
        ask(page, "Which UI theme does the user prefer?")
        expect(page.locator("code", has_text="sam-02").first).to_be_visible()  # the theme memory
        assert page.locator("[data-testid=stException]").count() == 0
        context.close()
        assert "Traceback" not in (tmp_path / "streamlit.log").read_text()
