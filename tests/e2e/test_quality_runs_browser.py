"""The Quality page on runs in headless Chromium: upload a judged set, run it on the
demo store, run it again with a weighting that over-rewards recency, compare the
two runs (screenshot for the README), and open a question B lost on via its link,
which reproduces it on Inspect (query, user, k, floor)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect
from st_browser import open_app, screenshot, wait_idle, widget

pytestmark = pytest.mark.e2e

DEMO_QUERIES = Path(__file__).resolve().parents[2] / "demo_data" / "queries.jsonl"
RUN_TIMEOUT_MS = 300_000


def pick(page, key: str, name: str) -> None:
    """Choose the option of the select box `key` whose label holds `name`, by typing, as a
    keyboard user does; Enter only once the list has filtered to it."""
    box = widget(page, key)
    box.scroll_into_view_if_needed()
    box.get_by_role("combobox").click()
    page.keyboard.type(name)
    expect(page.get_by_role("option").filter(has_text=name).first).to_be_visible()
    page.keyboard.press("Enter")
    wait_idle(page)
    expect(box.get_by_role("combobox")).to_have_value(re.compile(re.escape(name)))


def start_run(page, name: str) -> None:
    box = widget(page, "eval_run_name").locator("input")
    box.fill(name)
    box.press("Enter")
    wait_idle(page)
    widget(page, "eval_start").locator("button").click()
    expect(page.get_by_text(f"Run {name} complete: 38 questions.")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # The bar jumps to each value instead of sliding: during a long run each slide was
    # painted in software, about three times a second, on the cores the run needs.
    bar = page.get_by_test_id("stProgress")
    expect(bar).to_contain_text("38 of 38 questions")
    slides = bar.evaluate("el => [el, ...el.querySelectorAll('*')].map(e => getComputedStyle(e).transitionDuration)")
    assert set(slides) == {"0s"}, slides
    wait_idle(page, timeout=RUN_TIMEOUT_MS)


def test_upload_run_compare_and_open_a_lost_question_on_inspect(page, tmp_path, screenshots):
    judged = tmp_path / "team-questions.jsonl"
    judged.write_bytes(DEMO_QUERIES.read_bytes())
    open_app(page, "quality")
    page.get_by_text("Upload a judged set (JSONL) or promote labelled turns").click()
    widget(page, "eval_upload").locator("input[type=file]").set_input_files(str(judged))
    wait_idle(page)
    name = widget(page, "eval_upload_name").locator("input")
    name.fill("team questions")
    name.press("Enter")
    wait_idle(page)
    widget(page, "eval_keep_upload").locator("button").click()
    wait_idle(page)
    expect(page.get_by_text("Kept judged set team questions: 38 questions")).to_be_visible()

    k = widget(page, "eval_k").locator("input")
    k.fill("5")
    k.press("Enter")
    wait_idle(page)
    start_run(page, "default weights")

    # The same store re-weighted to favour fresh memories, from the sidebar's settings.
    page.get_by_test_id("stSidebar").get_by_text("Store settings").click()
    weights = widget(page, "cfg_embedded_weights").locator("input")
    weights.fill("semantic=0.05,recency=0.95,importance=0,usage=0")
    weights.press("Enter")
    wait_idle(page)
    start_run(page, "recency heavy")
    # The two runs, picked by name: the data directory may hold earlier tests' runs, and
    # the compare section keeps the pair it offered before these runs existed.
    pick(page, "eval_run_a", "default weights")
    pick(page, "eval_run_b", "recency heavy")

    # Typed into the select box, as a keyboard user picks an option.
    metric = widget(page, "eval_compare_metric")
    metric.scroll_into_view_if_needed()
    metric.get_by_role("combobox").click()
    page.keyboard.type("mrr")
    # Enter picks the first option the list shows: on a loaded machine it was pressed
    # before the list had filtered to "mrr", and picked another metric.
    option = page.get_by_role("option", name="mrr", exact=True)
    expect(option).to_be_visible()
    page.keyboard.press("Enter")
    wait_idle(page)
    expect(page.get_by_test_id("stMetric").filter(has_text="mrr, A")).to_be_visible(timeout=15_000)
    record = page.get_by_test_id("stMetric").filter(has_text="B wins / ties / losses")
    wins, ties, losses = (int(x) for x in record.get_by_test_id("stMetricValue").inner_text().split(" / "))
    assert losses > wins
    expect(page.get_by_text("Questions B lost most on")).to_be_visible()
    # The comparison itself, from its heading down (the README's picture).
    page.get_by_role("heading", name="Compare two runs").scroll_into_view_if_needed()
    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollBy(0, -10)")
    screenshot(page, screenshots / "quality-compare.png", full_page=False)

    # Follow the first question B lost on: Inspect opens on it.
    link = page.get_by_text("Open on Inspect:").locator("a").first
    href = link.get_attribute("href")
    params = parse_qs(urlsplit(href).query)
    assert urlsplit(href).path == "/inspect" and params["k"] == ["5"]
    page.goto(page.base_url + href)
    wait_idle(page, timeout=RUN_TIMEOUT_MS)
    expect(widget(page, "query").locator("input")).to_have_value(params["query"][0])
    expect(page.get_by_test_id("stCode").first).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
