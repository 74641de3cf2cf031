"""The Label page in headless Chromium, driven from the keyboard as its caption says:
read the sample log, create a small session, label with 1 / 2 / 3 and undo with U,
and find the progress again after a reload. AppTest cannot press keys; this can."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from st_browser import grid_rows, grid_with_column, open_app, screenshot, wait_idle, widget

pytestmark = pytest.mark.e2e

REVIEWER = "ana-e2e"
SESSION = "e2e-keyboard"


def sign_in(page) -> None:
    box = widget(page, "label_reviewer_input").locator("input")
    box.fill(REVIEWER)
    page.get_by_role("button", name="Start labelling").click()
    wait_idle(page)
    expect(page.get_by_test_id("stSidebar").get_by_text(f"Labelling as {REVIEWER}")).to_be_visible()


def upload_log(page, path) -> None:
    """Sign in on the Label page and read the file at `path` as a new session's log."""
    open_app(page, "label")
    sign_in(page)
    unfold_new_session_form(page)
    new_session_form(page).get_by_test_id("stRadio").get_by_text("Upload a log").click()
    wait_idle(page)
    widget(page, "log_upload").locator("input[type=file]").set_input_files(str(path))
    wait_idle(page)
    widget(page, "log_read").locator("button").click()
    wait_idle(page)


def press(page, key: str) -> None:
    """A key press with the focus on the page, not in a text box (shortcuts ignore those)."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)
    wait_idle(page)


def progress(page):
    return page.get_by_test_id("stProgress")


def test_a_session_labelled_from_the_keyboard_survives_a_reload(page, screenshots):
    open_app(page, "label")
    sign_in(page)
    read_sample_log(page)  # the form is folded when another test made a session first
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


def test_a_hostile_log_upload_names_every_bad_line_and_keeps_the_server_up(page, tmp_path):
    """A log whose first line is a bare `null` once crashed the whole server (arrow's
    JSON reader segfaults on it); two objects glued on one line, a byte-order mark and
    bad fields must each be named by line and field, and the good rows imported."""
    good = [{"message_id": f"m{i}", "memory_id": f"sam-0{i}", "rank": 1, "score": 0.5} for i in range(1, 4)]
    lines = [
        "null",  # 1
        json.dumps(good[0]),  # 2
        json.dumps(good[1]) + json.dumps(good[1]),  # 3 two objects on one line
        '{"message_id": "m9", "memory_id": "x", "rank": 0, "score": 0.4}',  # 4 rank 0
        "[1, 2]",  # 5
        json.dumps(good[2]),  # 6
        '{"message_id": "m8", "memory_id": "y", "rank": 1, "score": "high"}',  # 7
    ]
    path = tmp_path / "hostile-week.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode("utf-8") + b"\n")

    upload_log(page, path)
    expect(page.get_by_text("5 bad row(s) were skipped; the other rows were imported.")).to_be_visible()
    expect(page.get_by_text("hostile-week.jsonl: imported 2 rows in 2 turns from 7 read")).to_be_visible()
    problems = grid_rows(grid_with_column(page, "problem"))
    assert [(r["line"], r["field"]) for r in problems] == [
        ("1", "(line)"), ("3", "(line)"), ("4", "rank"), ("5", "(line)"), ("7", "score"),
    ]  # fmt: skip
    # The server is still up for everyone: another session opens the app.
    second = page.context.new_page()
    second.base_url = page.base_url
    open_app(second, "inspect")
    expect(second.get_by_role("heading", name="Inspect a retrieval")).to_be_visible()


def test_enter_in_the_size_does_not_create_the_session_before_its_text_box_is_ticked(page):
    """Enter in "Size" used to submit the form: the session was made without the
    message text the reviewer was about to keep. Only the button creates it."""
    open_app(page, "label")
    sign_in(page)
    read_sample_log(page)
    widget(page, "session_name").locator("input").fill("e2e-enter")
    size = widget(page, "sample_size").locator("input")
    size.fill("4")
    size.press("Enter")
    wait_idle(page)
    expect(page.get_by_text("Session 'e2e-enter' created")).to_have_count(0)

    widget(page, "session_keep_text").get_by_text("Keep the message text from the log with the session").click()
    page.get_by_role("button", name="Create session").click()
    wait_idle(page)
    expect(page.get_by_text("Session 'e2e-enter' created: 4 rows")).to_be_visible()
    expect(page.get_by_text("message text not available")).to_have_count(0)


def new_session_form(page):
    return page.get_by_test_id("stExpander").filter(has_text="New labelling session from a log")


def unfold_new_session_form(page) -> None:
    """The new-session expander folds once a session exists: open it. Its state is read
    from the `open` attribute Streamlit sets on the <details> as it mounts, not from
    whether the form inside is visible yet: while an expander is still drawing its
    content that looks folded, and a click would then fold the open form."""
    details = new_session_form(page).locator("details")
    if details.get_attribute("open") is None:
        details.locator("summary").click()
        wait_idle(page)
    expect(details).to_have_attribute("open", "")


def read_sample_log(page) -> None:
    """Read the bundled sample log in the new-session form."""
    unfold_new_session_form(page)
    widget(page, "log_read").locator("button").click()
    wait_idle(page)


def create_session(page, name: str, size: int) -> None:
    unfold_new_session_form(page)
    if not widget(page, "session_name").count():
        read_sample_log(page)
    widget(page, "session_name").locator("input").fill(name)
    widget(page, "sample_size").locator("input").fill(str(size))
    page.get_by_role("button", name="Create session").click()
    wait_idle(page)
    expect(page.get_by_text(f"Session '{name}' created: {size} rows")).to_be_visible()


def test_keys_label_right_after_a_session_is_picked(page):
    """Picking a session in the list left the focus in it, so 1 and 2 did nothing
    until the page was clicked; now the first key labels."""
    open_app(page, "label")
    sign_in(page)
    create_session(page, "e2e-picked-first", 4)
    create_session(page, "e2e-picked-second", 4)
    picker = widget(page, "label_session").get_by_role("combobox")
    expect(picker).to_have_value("e2e-picked-second")
    picker.click()
    picker.fill("e2e-picked-first")  # typed and chosen with Enter: the focus stays in the list
    page.keyboard.press("Enter")
    wait_idle(page)
    expect(picker).to_have_value("e2e-picked-first")
    expect(progress(page)).to_contain_text(f"of 4 rows done by {REVIEWER}")
    # the reviewer's labels are by id, so rows an earlier test labelled count as done
    done = int(progress(page).inner_text().split(" of ")[0])
    assert done < 4
    page.keyboard.press("1")  # no click on the page first
    wait_idle(page)
    expect(progress(page)).to_contain_text(f"{done + 1} of 4 rows done")
