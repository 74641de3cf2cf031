"""The Calibrate page in headless Chromium: the charts are drawn, the Inspect floor
comes along when the reviewer follows the sidebar link, and an uploaded label file
with bad lines is calibrated on its good rows with the bad ones named."""

from __future__ import annotations

import json
import random

import pytest
from playwright.sync_api import expect
from st_browser import chart_count, go_to, name_reviewer, open_app, screenshot, table_rows, wait_idle, widget

pytestmark = pytest.mark.e2e

CHARTS = ("calibrate_histogram", "calibrate_tradeoff", "calibrate_precision_recall", "calibrate_no_memory")


def label_file(path):
    """20 labelled hits over 10 turns that a floor between 0.30 and 0.50 separates,
    and two broken lines."""
    rng = random.Random(7)
    lines = []
    for turn in range(10):
        for position, (label, low, high) in enumerate((("relevant", 0.5, 0.7), ("not_relevant", 0.1, 0.3))):
            lines.append(
                json.dumps(
                    {
                        "message_id": f"turn-{turn}",
                        "memory_id": f"mem-{turn}-{position}",
                        "rank": position + 1,
                        "score": round(rng.uniform(low, high), 3),
                        "label": label,
                    }
                )
            )
    lines.insert(3, '{"message_id": "turn-x", "memory_id": "m", "score": "high", "label": "relevant"}')
    lines.insert(8, "{not json")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_calibrate_draws_its_charts_with_the_floor_from_inspect(page, screenshots):
    # The reviewer comes from a shared Inspect link with floor 0.20, labels one hit of
    # each kind (the module's fresh label store then holds these two to calibrate),
    # then follows the sidebar link.
    open_app(page, params={"query": "Which UI theme does the user prefer?", "user": "sam", "k": "5", "floor": "0.20"})
    expect(page.get_by_test_id("stCode").first).to_be_visible(timeout=240_000)
    name_reviewer(page, "ana")
    for key in ("relevant_sam-02", "not_relevant_sam-01"):
        widget(page, key).locator("button").click()
        wait_idle(page)
    go_to(page, "Calibrate")
    expect(page.get_by_role("heading", name="Calibrate the floor")).to_be_visible()
    for key in CHARTS:
        expect(widget(page, key).locator("svg.main-svg").first).to_be_visible(timeout=60_000)
        assert chart_count(page, key) == 1
    # The current Inspect floor is shown beside the recommendation, and drawn on the charts.
    inspect_floor = page.get_by_test_id("stMetric").filter(has_text="Inspect floor")
    expect(inspect_floor.get_by_test_id("stMetricValue")).to_have_text("0.20")
    expect(page.get_by_test_id("stMetric").filter(has_text="Recommended floor")).to_be_visible()
    expect(widget(page, "calibrate_tradeoff")).to_contain_text("0.20")
    screenshot(page, screenshots / "calibrate-from-inspect.png")


def test_an_uploaded_label_file_is_calibrated_and_its_bad_lines_named(page, tmp_path, screenshots):
    open_app(page, "calibrate")
    page.get_by_test_id("stRadio").get_by_text("Upload a file").click()
    wait_idle(page)
    widget(page, "calibrate_upload").locator("input[type=file]").set_input_files(str(label_file(tmp_path / "week-labels.jsonl")))
    wait_idle(page)
    expect(page.get_by_text("2 problem(s) in week-labels.jsonl: 2 row(s) skipped, 20 usable row(s) used.")).to_be_visible()
    expect(page.get_by_test_id("stMetric").filter(has_text="Labelled hits").get_by_test_id("stMetricValue")).to_have_text("20")
    expect(page.get_by_test_id("stMetric").filter(has_text="Turns").get_by_test_id("stMetricValue")).to_have_text("10")
    expect(page.get_by_text("Separating band:")).to_be_visible()
    for key in CHARTS:
        expect(widget(page, key).locator("svg.main-svg").first).to_be_visible()
    # The problems are listed by line and field.
    page.get_by_text("Problems, by line").click()
    problems = page.get_by_test_id("stExpander").filter(has_text="Problems, by line")
    rows = table_rows(problems)
    assert [(r["line"], r["field"], r["outcome"]) for r in rows] == [("4", "score", "row skipped"), ("9", "(line)", "row skipped")]
    assert "'high'" in rows[0]["problem"] and "not valid JSON" in rows[1]["problem"]
    screenshot(page, screenshots / "calibrate.png")  # the README's: a week of labels, one bad line named
