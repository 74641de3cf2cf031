"""The floor advice in headless Chromium: a week of rare, overlapping labels is
uploaded, the diagnosis and its warnings stand above the recommendation, the cost-ratio
floor drops most relevant memories so the default floor follows target recall 0.90 and
says why, and picking "Target recall" gives that floor and a .env download that names
the mode and the warnings.
The README's diagnosis screenshot comes from here."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from st_browser import open_app, screenshot, wait_idle, widget

from tests.dashboard.calibration.test_calibrate_advice_cli import write_rare_labels

pytestmark = pytest.mark.e2e


def metric_value(page, label: str) -> str:
    return page.get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue").inner_text()


def test_rare_overlapping_labels_get_a_diagnosis_and_a_target_recall_floor(page, tmp_path, screenshots):
    path = tmp_path / "benchmark-labels.jsonl"
    scores, relevant = write_rare_labels(path)
    open_app(page, "calibrate")
    page.get_by_test_id("stRadio").get_by_text("Upload a file").click()
    wait_idle(page)
    widget(page, "calibrate_upload").locator("input[type=file]").set_input_files(str(path))
    wait_idle(page, timeout=120_000)

    expect(page.get_by_test_id("stMetric").filter(has_text="ROC AUC")).to_be_visible()
    alerts = page.get_by_test_id("stAlert")
    expect(alerts.filter(has_text="a floor cannot fix this ranking")).to_be_visible()
    dropping = alerts.filter(has_text=re.compile(r"\(cost ratio 1\) drops \d+ of \d+ relevant memories"))
    expect(dropping.first).to_be_visible()
    # The default floor does not empty most prompts: it follows target recall 0.90 and
    # names the cost-ratio floor beside it.
    why = alerts.filter(has_text="MEMORY_SCORE_FLOOR follows target recall 0.90")
    expect(why).to_be_visible()
    cost_floor = float(re.search(r"the cost-ratio floor (\d+\.\d+) \(cost ratio 1\)", why.inner_text()).group(1))
    kept = scores >= cost_floor
    assert (kept & relevant).sum() < relevant.sum() / 2  # the warning is true: most relevant memories dropped
    default_floor = float(metric_value(page, "Recommended floor (target recall 0.90)"))
    assert (scores >= default_floor)[relevant].mean() >= 0.9

    recommended = page.get_by_test_id("stMetric").filter(has_text="Recommended floor")
    box = recommended.bounding_box()
    screenshot(page, screenshots / "calibrate-diagnosis.png", height=int(box["y"] + box["height"] + 80))

    widget(page, "floor_mode").get_by_text("Target recall").click()
    wait_idle(page, timeout=120_000)
    floor = float(metric_value(page, "Recommended floor (target recall 0.90)"))
    assert (scores >= floor)[relevant].mean() >= 0.9
    expect(page.get_by_test_id("stCode").first).to_have_text(re.compile(rf"MEMORY_SCORE_FLOOR={floor:g}"))
    expect(page.get_by_text("Floors per segment")).to_be_visible()

    # The downloaded .env names the mode and carries the warnings above the line.
    with page.expect_download() as download_info:
        widget(page, "download_floor_env").locator("button").click()
    lines = open(download_info.value.path(), encoding="utf-8").read().splitlines()
    assert lines[0] == "# memlens: floor chosen by target recall 0.90"
    assert any(line.startswith("# warning: At every floor that keeps 90% of relevant memories") for line in lines)
    assert lines[-1] == f"MEMORY_SCORE_FLOOR={metric_value(page, 'Recommended floor (target recall 0.90)')}"
