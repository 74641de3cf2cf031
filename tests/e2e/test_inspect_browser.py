"""The Inspect page in headless Chromium against `streamlit run`, as a reviewer uses it:
the pizza question, the floor, two labels that survive a reload, the JSONL download,
and a shared link."""

from __future__ import annotations

import json
import math
import sqlite3
from urllib.parse import parse_qs, urlparse

import pytest
from demo_questions import PIZZA
from playwright.sync_api import expect
from st_browser import (
    FIRST_RESULT_TIMEOUT_MS,
    ask,
    code_blocks,
    move_slider,
    name_reviewer,
    open_app,
    screenshot,
    slider_value,
    table_rows,
    wait_idle,
    widget,
)

pytestmark = pytest.mark.e2e

THEME = "Prefers light UI theme"
NO_MEMORY = "No stored memory is relevant to this message."
EXPORT_FIELDS = {"message_id", "memory_id", "rank", "score", "label", "reviewer", "store", "created_at", "updated_at"}


def row_for(rows: list[dict[str, str]], text: str) -> dict[str, str]:
    [row] = [r for r in rows if r["text"] == text]
    return row


def test_pizza_query_drops_the_theme_memory_and_the_floor_changes_the_prompt(page, screenshots):
    open_app(page)
    # What a first-time reviewer lands on: the demo store, sam, k = 5, floor 0.35.
    expect(page.get_by_role("heading", name="Inspect a retrieval")).to_be_visible()
    expect(widget(page, "user").get_by_role("combobox")).to_have_value("sam")
    expect(widget(page, "k").locator("input")).to_have_value("5")
    assert slider_value(page, "floor") == "0.35"

    ask(page, PIZZA)
    rows = table_rows(page)
    assert len(rows) == 5
    theme = row_for(rows, THEME)
    assert theme["rank"] == "1"
    assert theme["status"] == "dropped"
    assert {r["status"] for r in rows} == {"dropped"}  # nothing about food is stored
    assert code_blocks(page)[0].startswith(NO_MEMORY)
    expect(page.get_by_text("Every hit scores under the floor 0.35.")).to_be_visible()
    screenshot(page, screenshots / "inspect-pizza.png", height=1420)  # the README's picture
    screenshot(page, screenshots / "inspect-pizza-full.png")

    # Slide the floor down to just under the theme memory's score, with the keyboard.
    score = float(theme["score"])
    target = math.floor(score * 100) / 100
    move_slider(page, "floor", round(target * 100) - 35)
    assert slider_value(page, "floor") == f"{target:.2f}"
    expect(page.get_by_test_id("stCode").first).to_contain_text(THEME)
    block = code_blocks(page)[0]
    assert block.startswith("Relevant memories about the user:")
    rows = table_rows(page)
    assert row_for(rows, THEME)["status"] == "kept"
    kept_texts = [r["text"] for r in rows if r["status"] == "kept"]
    # The block lists exactly the kept memories, never a dropped one.
    assert [line[2:] for line in block.splitlines()[1:]] == kept_texts
    assert all(float(r["score"]) >= target for r in rows if r["status"] == "kept")
    assert all(float(r["score"]) < target for r in rows if r["status"] == "dropped")
    screenshot(page, screenshots / "inspect-floor-moved.png", height=1420)


def test_two_labels_survive_a_reload_and_download_as_jsonl_rows(page, server, screenshots):
    open_app(page)
    ask(page, PIZZA)
    rows = table_rows(page)
    theme_id = row_for(rows, THEME)["memory id"]
    other = next(r for r in rows if r["memory id"] != theme_id)
    other_id = other["memory id"]

    name_reviewer(page, "reviewer")
    widget(page, f"not_relevant_{theme_id}").locator("button").click()
    expect(page.get_by_text("❌ not relevant")).to_have_count(1)
    widget(page, f"relevant_{other_id}").locator("button").click()
    expect(page.get_by_text("✅ relevant")).to_have_count(1)
    wait_idle(page)
    # The clicked choice is highlighted on its row.
    expect(widget(page, f"not_relevant_{theme_id}").get_by_test_id("stBaseButton-primary")).to_be_visible()
    expect(widget(page, f"relevant_{other_id}").get_by_test_id("stBaseButton-primary")).to_be_visible()

    # A reload is a new session: the query comes back from the URL, the labels from
    # disk once the reviewer has said who they are (asked once per browser session).
    page.reload()
    wait_idle(page, timeout=120_000)
    expect(widget(page, "query").locator("input")).to_have_value(PIZZA)
    name_reviewer(page, "reviewer")
    expect(page.get_by_text("❌ not relevant")).to_have_count(1)
    expect(page.get_by_text("✅ relevant")).to_have_count(1)
    expect(widget(page, f"not_relevant_{theme_id}").get_by_test_id("stBaseButton-primary")).to_be_visible()
    screenshot(page, screenshots / "inspect-labels.png")

    with page.expect_download() as download_info:
        widget(page, "download_jsonl").locator("button").click()
    download = download_info.value
    assert download.suggested_filename == "memlens-labels.jsonl"
    text = open(download.path(), encoding="utf-8").read()
    exported = [json.loads(line) for line in text.splitlines()]
    mine = {row["memory_id"]: row for row in exported if row["memory_id"] in (theme_id, other_id)}
    assert set(mine) == {theme_id, other_id}
    for row in mine.values():
        assert set(row) == EXPORT_FIELDS  # ids and scores only: no memory or query text
        assert row["message_id"].startswith("live-")
        assert row["reviewer"] == "reviewer"
        assert row["store"].startswith("embedded:")
    assert mine[theme_id]["label"] == "not_relevant"
    assert mine[other_id]["label"] == "relevant"
    assert mine[theme_id]["rank"] == 1
    assert mine[theme_id]["score"] == pytest.approx(float(row_for(rows, THEME)["score"]))
    assert mine[other_id]["rank"] == int(other["rank"])
    assert mine[theme_id]["message_id"] == mine[other_id]["message_id"]
    assert THEME not in text and "pizza" not in text.lower()

    # And the label database the server wrote holds the same two judgments.
    with sqlite3.connect(server.data_dir / "labels.sqlite") as db:
        stored = dict(db.execute("SELECT memory_id, label FROM labels WHERE memory_id IN (?, ?)", (theme_id, other_id)))
    assert stored == {theme_id: "not_relevant", other_id: "relevant"}


def test_a_shared_link_lands_on_the_same_query_and_floor(page):
    open_app(page, params={"query": PIZZA, "user": "sam", "k": "5", "floor": "0.20"})
    # the link's first run hands its values to a second run, which also searches the
    # store: on a loaded machine that run took over expect's default 5 s to draw the box
    expect(widget(page, "query").locator("input")).to_have_value(PIZZA, timeout=FIRST_RESULT_TIMEOUT_MS)
    assert slider_value(page, "floor") == "0.20"
    expect(widget(page, "user").get_by_role("combobox")).to_have_value("sam")
    expect(page.get_by_test_id("stCode").first).to_be_visible(timeout=120_000)
    rows = table_rows(page)
    assert len(rows) == 5
    kept = [r for r in rows if r["status"] == "kept"]
    assert row_for(rows, THEME)["status"] == "kept"  # 0.2x clears a 0.20 floor
    assert all(float(r["score"]) >= 0.20 for r in kept)
    assert all(float(r["score"]) < 0.20 for r in rows if r["status"] == "dropped")
    assert code_blocks(page)[0].count("\n- ") == len(kept)
    # The address bar still says what is shown, so the link can be passed on again.
    shared = {key: values[0] for key, values in parse_qs(urlparse(page.url).query).items()}
    assert shared == {"query": PIZZA, "user": "sam", "k": "5", "floor": "0.20"}
