"""The Label page in headless Chromium, driven from the keyboard as its caption says:
read the sample log, create a small session, label with 1 / 2 / 3 and undo with U,
and find the progress again after a reload. AppTest cannot press keys; this can."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from st_browser import open_app, screenshot, wait_idle, widget

pytestmark = pytest.mark.e2e

REVIEWER = "ana-e2e"
SESSION = "e2e-keyboard"


def sign_in(page) -> None:
    box = widget(page, "label_reviewer_input").locator("input")
    box.fill(REVIEWER)
    page.get_by_role("button", name="Start labelling").click()
    wait_idle(page)
    expect(page.get_by_test_id("stSidebar").get_by_text(f"Labelling as {REVIEWER}")).to_be_visible()


def press(page, key: str) -> None:
    """A key press with the focus on the page, not in a text box (shortcuts ignore those)."""
    page.get_by_role("heading", name="Label a session").click()
    page.keyboard.press(key)
    wait_idle(page)


def progress(page):
    return page.get_by_test_id("stProgress")


def test_a_session_labelled_from_the_keyboard_survives_a_reload(page, screenshots):
    open_app(page, "label")
    sign_in(page)
    widget(page, "log_read").locator("button").click()
    wait_idle(page)
    session_name = widget(page, "session_name").locator("input")
    expect(session_name).to_be_visible()
    session_name.fill(SESSION)
    size = widget(page, "sample_size").locator("input")
    size.fill("4")
    page.get_by_role("button", name="Create session").click()
    wait_idle(page)
    expect(page.get_by_text(f"Session '{SESSION}' created: 4 rows")).to_be_visible()
    expect(progress(page)).to_contain_text(f"0 of 4 rows done by {REVIEWER}")
    expect(page.get_by_text("Keys: 1 relevant · 2 not relevant · 3 skip · U undo")).to_be_visible()

    press(page, "1")
    expect(progress(page)).to_contain_text("1 of 4 rows done")
    labels = page.get_by_test_id("stMetric").filter(has_text="Labels").get_by_test_id("stMetricValue")
    expect(labels).to_have_text("1")  # saved the moment the key was pressed
    press(page, "2")
    expect(progress(page)).to_contain_text("2 of 4 rows done")
    press(page, "u")  # undo the "not relevant"
    expect(progress(page)).to_contain_text("1 of 4 rows done")
    press(page, "3")  # skip it instead
    expect(progress(page)).to_contain_text("2 of 4 rows done")
    screenshot(page, screenshots / "label-session.png")

    # A reload is a new browser session: the name is asked again, the progress is on disk.
    page.reload()
    wait_idle(page, timeout=120_000)
    sign_in(page)
    expect(widget(page, "label_session").get_by_role("combobox")).to_have_value(SESSION)
    expect(progress(page)).to_contain_text(f"2 of 4 rows done by {REVIEWER}")

    with page.expect_download() as download_info:
        widget(page, "session_download_jsonl").locator("button").click()
    rows = [json.loads(line) for line in open(download_info.value.path(), encoding="utf-8") if line.strip()]
    mine = [row for row in rows if row.get("reviewer") == REVIEWER]
    assert [row["label"] for row in mine] == ["relevant"]  # a skip is not a label
    assert not {"memory_text", "query_text"} & set(mine[0])
