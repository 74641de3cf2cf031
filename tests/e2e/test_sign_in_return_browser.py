"""Sign-in returns to the page asked for: a visitor opens /label behind OpenID
Connect sign-in (`streamlit run` with an [auth] section pointing at a local
provider, oidc-provider-mock on loopback), signs in on the provider's form, and
lands on the Label page, not on Inspect."""

from __future__ import annotations

import pytest
from signed_in_server import streamlit_behind_sign_in
from st_browser import FIRST_RESULT_TIMEOUT_MS, wait_idle

pytestmark = pytest.mark.e2e

IDENTITY = "ben@example.test"


def test_sign_in_from_the_label_page_comes_back_to_it(tmp_path, browser):
    with streamlit_behind_sign_in(tmp_path) as app:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(f"{app.url}/label")
        wait_idle(page)
        page.get_by_text("Sign in to continue").wait_for()
        page.get_by_role("button", name="Sign in").click()
        page.locator("input[name=sub]").fill(IDENTITY)
        page.get_by_role("button", name="Authorize").click()
        page.wait_for_url(f"{app.url}/label", timeout=FIRST_RESULT_TIMEOUT_MS)
        wait_idle(page, timeout=FIRST_RESULT_TIMEOUT_MS)
        page.get_by_role("heading", name="Label a session").wait_for(timeout=FIRST_RESULT_TIMEOUT_MS)
        page.get_by_text(f"Signed in as {IDENTITY}").wait_for()
        # Once: going to Inspect afterwards stays on Inspect.
        page.goto(app.url)
        wait_idle(page, timeout=FIRST_RESULT_TIMEOUT_MS)
        page.get_by_text(f"Signed in as {IDENTITY}").wait_for()
        page.wait_for_timeout(1000)
        assert page.url.split("?")[0].rstrip("/") == app.url.rstrip("/")  # Inspect, not sent to /label again
        context.close()
