"""The Quality page's miss anatomy in headless Chromium: a judged set whose one
evidence memory was never stored (`sam-404`) is run on the demo store at k=1; the
panel counts the four causes, a click on the past_k bar lists that cause's
questions (screenshot for the docs), and a question's link opens it on Inspect."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect
from st_browser import open_app, screenshot, wait_idle, widget

pytestmark = pytest.mark.e2e

DEMO_QUERIES = Path(__file__).resolve().parents[2] / "demo_data" / "queries.jsonl"
RUN_TIMEOUT_MS = 300_000
# A chart's selection reaches the server a moment after the click, and the rerun it
# starts can begin after wait_idle's grace on a busy machine: wait for its result.
RERUN_TIMEOUT_MS = 60_000


def judged_file(directory: Path) -> Path:
    rows = []
    for line in DEMO_QUERIES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row.pop("answerable", None)
        if row["message_id"] == "demo-q03":
            row["relevant"] = [*row["relevant"], "sam-404"]  # evidence the store never got
        rows.append(json.dumps(row))
    path = directory / "gaps.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def metric_value(page, label: str) -> int:
    card = page.get_by_test_id("stMetric").filter(has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True))
    return int(card.get_by_test_id("stMetricValue").inner_text())


def test_a_bar_lists_its_questions_and_a_link_opens_one_on_inspect(page, tmp_path, screenshots):
    open_app(page, "quality")
    page.get_by_text("Upload a judged set (JSONL) or promote labelled turns").click()
    widget(page, "eval_upload").locator("input[type=file]").set_input_files(str(judged_file(tmp_path)))
    wait_idle(page)
    name = widget(page, "eval_upload_name").locator("input")
    name.fill("gaps")
    name.press("Enter")
    wait_idle(page)
    widget(page, "eval_keep_upload").locator("button").click()
    wait_idle(page)
    k = widget(page, "eval_k").locator("input")
    k.fill("1")
    k.press("Enter")
    wait_idle(page)
    run_name = widget(page, "eval_run_name").locator("input")
    run_name.fill("k1")
    run_name.press("Enter")
    wait_idle(page)
    widget(page, "eval_start").locator("button").click()
    expect(page.get_by_text("Run k1 complete: 38 questions.")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    wait_idle(page, timeout=RUN_TIMEOUT_MS)

    find = widget(page, "misses_find").locator("button")
    find.scroll_into_view_if_needed()
    find.click()
    wait_idle(page, timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("stMetricLabel").get_by_text("not_stored", exact=True)).to_be_visible(timeout=RERUN_TIMEOUT_MS)
    assert metric_value(page, "not_stored") == 1
    past_k = metric_value(page, "past_k")
    assert past_k > 0

    # A click on the past_k bar (the second) picks that cause below the chart.
    bars = widget(page, "misses_chart").locator(".bars .point path")
    expect(bars).to_have_count(4, timeout=30_000)  # the chart code loads lazily
    bar = bars.nth(1)
    bar.scroll_into_view_if_needed()
    box = bar.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    # The bar's hover label shows once the chart answers the pointer: then a click selects.
    expect(widget(page, "misses_chart").locator(".hoverlayer").get_by_text(f"past_k: {past_k} pair(s)")).to_be_visible(
        timeout=30_000)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wait_idle(page)
    expect(widget(page, "misses_cause").get_by_role("radio", name=f"past_k ({past_k})")).to_be_checked(timeout=RERUN_TIMEOUT_MS)
    wait_idle(page)
    page.get_by_text("Where the relevant memories were lost").scroll_into_view_if_needed()
    screenshot(page, screenshots / "quality-misses.png", full_page=False)

    # Its questions' links open each on Inspect with the run's store, k and floor.
    link = page.get_by_text("Open on Inspect:").locator("a").first
    href = link.get_attribute("href")
    assert href is not None
    params = parse_qs(urlsplit(href).query)
    assert urlsplit(href).path == "/inspect" and params["k"] == ["1"] and params["store"] == ["embedded"]
    page.goto(page.base_url + href)
    wait_idle(page, timeout=RUN_TIMEOUT_MS)
    expect(widget(page, "query").locator("input")).to_have_value(params["query"][0])
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible(timeout=RUN_TIMEOUT_MS)
