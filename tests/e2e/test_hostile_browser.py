"""Hostile results in a real browser. The app talks to a loopback service (started
here, outside the app's process) through its HTTP JSON connector, configured in the
sidebar as a reviewer would: markup in memories must show as characters and never
run, unicode and formula ids must reach the downloads intact (formulas quoted), and a
100,000-row answer with a 10 MB memory must draw cut down and stay usable."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hostile_service import FORMULA_ID, HUGE_ROWS, HUGE_TEXT_CHARS, INERT, HostileService
from playwright.sync_api import expect
from st_browser import choose, code_blocks, move_slider, name_reviewer, open_app, screenshot, slider_value, wait_idle, widget

from dashboard.display import WORD_JOINER

pytestmark = pytest.mark.e2e

QUERY = "What does the user like?"


@pytest.fixture(scope="module")
def service():
    running = HostileService()
    yield running
    running.stop()


def use_service(page, service, tmp_path, route: str) -> None:
    """Pick the HTTP JSON store in the sidebar, point it at the route's TOML file, ask."""
    open_app(page)
    choose(page, "store", "HTTP JSON service (TOML-described)")
    page.get_by_test_id("stSidebar").get_by_text("Store settings").click()
    box = widget(page, "cfg_http_json_config_path").locator("input")
    box.fill(str(service.write_config(tmp_path, route)))
    box.press("Enter")
    wait_idle(page)
    user = widget(page, "user").locator("input")
    user.fill("mallory")
    user.press("Enter")
    wait_idle(page)
    # The page stopped early while the store had no settings; the floor must not
    # have been lost on the way (it once came back as 0.00, keeping every hit).
    assert slider_value(page, "floor") == "0.35"
    query = widget(page, "query").locator("input")
    query.fill(QUERY)
    query.press("Enter")
    expect(page.get_by_test_id("stCode").first).to_be_visible(timeout=120_000)
    wait_idle(page, timeout=120_000)


def label_row(page, memory_id: str):
    """The label row (a row of columns) whose code span holds this memory id."""
    return page.get_by_test_id("stHorizontalBlock").filter(has=page.locator("code", has_text=memory_id)).last


def squeezed(text: str) -> str:
    """Runs of blanks as one space; the invisible word joiner the page puts into
    `:name:` shortcodes (so Streamlit does not turn them into icons) left out."""
    return " ".join(text.replace(WORD_JOINER, "").split())


def test_markup_in_memories_shows_as_characters_and_never_runs(page, service, tmp_path, screenshots):
    use_service(page, service, tmp_path, "/inert")
    name_reviewer(page, "reviewer")  # the label rows quote each memory too
    for memory_id, text in INERT.items():
        row = label_row(page, memory_id)
        expect(row).to_be_visible()
        assert squeezed(text) in squeezed(row.inner_text()), memory_id
        # no icon, emoji picture or logo drawn from a shortcode in the text
        assert row.locator("[role=img], img, svg").count() == 0, memory_id
    # Nothing in a memory became an element, a link or a script that ran.
    assert page.evaluate("() => window.__memlens_pwned") is None
    main = page.get_by_test_id("stMain")
    assert main.locator("img[src='x'], a[href^='javascript'], h1:has-text('Not a heading')").count() == 0
    # Anywhere on the page (re-rank review notes quote ids too): no link from a memory.
    assert main.locator("a[href*='evil.example'], a[href^='javascript'], a[href^='mailto']").count() == 0
    assert main.locator("strong", has_text="Bold claim").count() == 0
    assert main.locator("b", has_text="bold tag").count() == 0
    assert main.locator("li", has_text="not a list item").count() == 0
    assert page.evaluate("() => [...document.scripts].some(s => s.text.includes('__memlens_pwned'))") is False
    # The prompt block (every hit clears the default floor here) holds the same characters.
    block = code_blocks(page)[0]
    assert all(text in block for text in INERT.values())
    screenshot(page, screenshots / "hostile-markup.png")


def test_rtl_text_and_formula_ids_reach_both_downloads_intact(page, service, tmp_path):
    use_service(page, service, tmp_path, "/inert")
    name_reviewer(page, "reviewer")
    widget(page, "store_text").get_by_text("Store memory and query text with labels").click()
    wait_idle(page)
    label_row(page, "x-rtl").get_by_role("button", name="Relevant", exact=True).click()
    expect(label_row(page, "x-rtl")).to_contain_text("✅ relevant")
    label_row(page, FORMULA_ID).get_by_role("button", name="Not relevant", exact=True).click()
    expect(label_row(page, FORMULA_ID)).to_contain_text("❌ not relevant")
    wait_idle(page)

    with page.expect_download() as jsonl_download:
        widget(page, "download_jsonl").locator("button").click()
    rows = [json.loads(line) for line in open(jsonl_download.value.path(), encoding="utf-8")]
    by_id = {row["memory_id"]: row for row in rows}
    assert by_id["x-rtl"]["memory_text"] == INERT["x-rtl"]
    assert by_id["x-rtl"]["query_text"] == QUERY
    assert by_id[FORMULA_ID]["label"] == "not_relevant"  # JSONL is data: the id as it is

    with page.expect_download() as csv_download:
        widget(page, "download_csv").locator("button").click()
    text = open(csv_download.value.path(), encoding="utf-8", newline="").read()
    cells = {row["memory_text"]: row for row in csv.DictReader(io.StringIO(text, newline=""))}
    assert cells[INERT["x-rtl"]]["memory_id"] == "x-rtl"
    formula_row = cells[INERT[FORMULA_ID]]
    assert formula_row["memory_id"] == "'" + FORMULA_ID  # a spreadsheet shows it, never runs it
    assert not any(cell.startswith(("=", "+", "@")) for row in cells.values() for cell in row.values() if cell)


def test_a_100000_row_answer_with_a_10_mb_memory_draws_cut_down_and_stays_usable(page, service, tmp_path, screenshots):
    use_service(page, service, tmp_path, "/huge")
    expect(page.get_by_text(f"Showing the first 1,000 of {HUGE_ROWS:,} results.")).to_be_visible()
    name_reviewer(page, "reviewer")  # the label rows come once someone labels
    expect(page.get_by_text(f"Labelling the first 200 of {HUGE_ROWS:,} results.")).to_be_visible()
    expect(page.get_by_text(f"Text cut to 2,000 of {HUGE_TEXT_CHARS:,} characters.")).to_be_visible()
    expect(page.get_by_text("Prompt block cut to 20,000 of")).to_be_visible()
    kept = page.get_by_test_id("stMetric").filter(has_text="Kept").first.get_by_test_id("stMetricValue")
    # Scores fall evenly from 1 to 0: the default floor 0.35 keeps 65,001 of them.
    expect(kept).to_have_text("65001")
    assert widget(page, "relevant_m000199").count() == 1 and widget(page, "relevant_m000200").count() == 0
    screenshot(page, screenshots / "hostile-huge.png", full_page=False)
    # The page still answers: a floor move redraws everything from the result in hand.
    move_slider(page, "floor", 10)
    expect(kept).to_have_text("55001")
    assert len(code_blocks(page)[0]) < 25_000
    assert service.requests.count("/huge") == 1  # the floor move did not query the service again


@pytest.mark.parametrize("route", ["/markup", "/rejects"])
def test_markup_in_ids_scores_breakdowns_and_store_errors_makes_no_element(page, service, tmp_path, route):
    """A store's ids, a non-numeric score, a breakdown key and a 400's message are
    shown as characters: the page has no image or link of theirs, and the browser
    never asked the store's address for the picture."""
    open_app(page)
    choose(page, "store", "HTTP JSON service (TOML-described)")
    page.get_by_test_id("stSidebar").get_by_text("Store settings").click()
    box = widget(page, "cfg_http_json_config_path").locator("input")
    box.fill(str(service.write_config(tmp_path, route)))
    box.press("Enter")
    wait_idle(page)
    query = widget(page, "query").locator("input")
    query.fill(QUERY)
    query.press("Enter")
    wait_idle(page, timeout=120_000)
    main = page.get_by_test_id("stMain")
    expected = "Re-login here"
    expect(main.get_by_text(expected, exact=False).first).to_be_visible(timeout=120_000)
    wait_idle(page)
    leaks = main.locator(f"img[src*='{service.url}'], a[href*='{service.url}'], a:has-text('{expected}')")
    assert leaks.count() == 0
    assert main.locator("[data-testid=stMarkdownContainer] img, .katex").count() == 0
    assert not [path for path in service.fetched if path.startswith("/leak")]
