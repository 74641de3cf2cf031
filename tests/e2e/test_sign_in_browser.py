"""A real OpenID Connect sign-in round trip: `streamlit run` configured with an
[auth] section pointing at a local provider (oidc-provider-mock on loopback),
Chromium signs in on the provider's own form, labels under the signed-in identity,
and signs out (st.logout)."""

from __future__ import annotations

import sqlite3

import pytest
from demo_questions import THEME
from signed_in_server import streamlit_behind_sign_in
from st_browser import FIRST_RESULT_TIMEOUT_MS, ask, wait_idle

pytestmark = pytest.mark.e2e

IDENTITY = "ana@example.test"


def test_sign_in_label_as_the_signed_in_identity_and_sign_out(tmp_path, browser):
    with streamlit_behind_sign_in(tmp_path) as app:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.base_url = app.url
        page.goto(app.url)
        wait_idle(page)
        page.get_by_text("Sign in to continue").wait_for()
        assert page.locator(".st-key-query").count() == 0  # nothing of the page before sign-in
        page.get_by_role("button", name="Sign in").click()
        # The provider's own authorization form, then back to the app.
        page.locator("input[name=sub]").fill(IDENTITY)
        page.get_by_role("button", name="Authorize").click()
        page.wait_for_url(f"{app.url}/**")
        wait_idle(page, timeout=FIRST_RESULT_TIMEOUT_MS)
        page.get_by_text(f"Signed in as {IDENTITY}").wait_for()
        ask(page, THEME)
        page.locator(".st-key-relevant_sam-02 button").click()
        page.get_by_text("✅ relevant").first.wait_for()
        with sqlite3.connect(app.data_dir / "labels.sqlite") as db:
            reviewers = {row[0] for row in db.execute("SELECT reviewer FROM labels")}
        assert reviewers == {IDENTITY}
        page.get_by_role("button", name="Sign out").click()
        # The provider asks to confirm ending its session, then sends the browser back.
        page.get_by_role("button", name="End session").click()
        page.get_by_text("Sign in to continue").wait_for(timeout=FIRST_RESULT_TIMEOUT_MS)
        assert page.get_by_text(f"Signed in as {IDENTITY}").count() == 0
        context.close()
