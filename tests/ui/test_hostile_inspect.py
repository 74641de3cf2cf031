"""Hostile results on the Inspect page (AppTest), through the real HTTP JSON connector
talking to a loopback service: markup shown as the characters it is made of,
right-to-left text kept, and results too big to draw cut down with a note.

What the reviewer sees of a Markdown element is the HTML a Markdown renderer makes
of it; markdown-it (CommonMark, raw HTML allowed: the most permissive reading) stands
in for the browser here, and tests/e2e checks the real one.
"""

from __future__ import annotations

import html
import re

import pytest
from hostile_service import BACKTICK_ID, FORMULA_ID, HUGE_ROWS, HUGE_TEXT_CHARS, INERT, HostileService
from markdown_it import MarkdownIt
from markdown_text import seen

from dashboard.display import TABLE_TEXT_CHARS, WORD_JOINER
from dashboard.ui.pages.inspect import MAX_LABEL_ROWS, MAX_NOTES, MAX_TABLE_ROWS

# Labels here are saved under a named reviewer, as a deployment names one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("named_reviewer")


SEARCH = "FormSubmitter:query_form-Search"
RENDER = MarkdownIt("commonmark", {"html": True})
TAGS = re.compile(r"<[^>]+>")
# Everything the page sends for one rerun must stay small enough for a browser to
# draw at once, whatever the store returned (the 10 MB text alone is 10,485,760).
PAGE_BYTES_LIMIT = 2_000_000


@pytest.fixture(scope="module")
def service():
    running = HostileService()
    yield running
    running.stop()


def open_route(app, service, tmp_path, route: str, **state):
    at = app(store="http_json", cfg_http_json_config_path=str(service.write_config(tmp_path, route)), **state)
    at.run()
    at.text_input(key="query").input("What does the user like?")
    at.button(key=SEARCH).click().run()
    assert not at.exception, at.exception
    return at


def shown_text(markdown_source: str) -> str:
    """The text a reader sees of rendered Markdown (tags removed, entities decoded)."""
    return html.unescape(TAGS.sub("", RENDER.render(markdown_source))).replace(WORD_JOINER, "")


def label_row_markdown(at, memory_id: str) -> str:
    """The Markdown of the label row showing this memory (the row's id is in it)."""
    rows = [m.value for m in at.markdown if m.value.startswith("**#") and memory_id in shown_text(m.value)]
    assert len(rows) == 1, [m.value for m in at.markdown if m.value.startswith("**#")]
    return rows[0]


def walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)


def page_bytes(at) -> int:
    return sum(node.proto.ByteSize() for node in walk(at._tree) if getattr(node, "proto", None) is not None)


@pytest.mark.parametrize("memory_id", list(INERT))
def test_markup_in_a_memory_is_shown_as_its_characters(app, service, tmp_path, memory_id):
    at = open_route(app, service, tmp_path, "/inert")
    text = INERT[memory_id]
    source = label_row_markdown(at, memory_id)
    rendered = RENDER.render(source)
    # No element comes from the memory: only the row's own bold rank and code id
    # (and line breaks where the memory has them).
    assert [tag for tag in re.findall(r"<(\w+)", rendered) if tag != "br"] == ["p", "strong", "code"]
    seen = shown_text(source)
    assert memory_id in seen
    assert " ".join(text.split()) in " ".join(seen.split())
    # The table and the prompt block carry the text verbatim (a canvas and a code block).
    frame = at.dataframe[0].value
    assert frame.set_index("memory id").loc[memory_id, "text"] == text


def test_a_memory_id_with_backticks_cannot_break_out_of_its_code_span(app, service, tmp_path):
    at = open_route(app, service, tmp_path, "/inert")
    for memory_id in (BACKTICK_ID, FORMULA_ID):
        source = label_row_markdown(at, memory_id)
        code = re.findall(r"<code>(.*?)</code>", RENDER.render(source))
        assert [html.unescape(c) for c in code] == [memory_id]
        assert "<strong>not bold" not in RENDER.render(source)


def test_right_to_left_and_combining_text_is_kept_in_table_prompt_and_labels(app, service, tmp_path):
    at = open_route(app, service, tmp_path, "/inert", store_text=True)
    at.slider(key="floor").set_value(0.0).run()
    prompt = at.code[0].value
    for memory_id in ("x-rtl", "x-bidi"):
        assert INERT[memory_id] in prompt
        at.button(key=f"relevant_{memory_id}").click().run()
    labels = at.dataframe[1].value.set_index("memory_id")
    assert labels.loc["x-rtl", "memory_text"] == INERT["x-rtl"]
    assert labels.loc["x-bidi", "memory_text"] == INERT["x-bidi"]
    assert labels.loc["x-rtl", "query_text"] == "What does the user like?"


def test_a_100000_row_result_with_a_10_mb_memory_is_cut_down_with_notes(app, service, tmp_path):
    at = open_route(app, service, tmp_path, "/huge")
    at.slider(key="floor").set_value(0.0).run()  # everything kept: the prompt block is the biggest it gets
    assert not at.exception
    captions = [c.value for c in at.caption]
    frame = at.dataframe[0].value
    assert len(frame) == MAX_TABLE_ROWS
    assert f"Showing the first {MAX_TABLE_ROWS:,} of {HUGE_ROWS:,} results." in captions
    assert frame["text"].str.len().max() <= TABLE_TEXT_CHARS + 1
    assert [m.value for m in at.metric][:3] == [str(HUGE_ROWS), str(HUGE_ROWS), "0"]
    # Label buttons for the first MAX_LABEL_ROWS only, and the reviewer is told.
    relevant_buttons = [b for b in at.button if b.key and b.key.startswith("relevant_")]
    assert len(relevant_buttons) == MAX_LABEL_ROWS
    assert f"Labelling the first {MAX_LABEL_ROWS} of {HUGE_ROWS:,} results." in captions
    assert any(c.startswith("Text cut to 2,000 of") and f"{HUGE_TEXT_CHARS:,} characters" in c for c in captions)
    # The prompt block would hold 10 MB and 100,000 lines: shown cut, with a note.
    assert len(at.code[0].value) < 100_000
    assert any("Prompt block cut" in c for c in captions), captions
    assert page_bytes(at) < PAGE_BYTES_LIMIT
    # A floor move on the same result stays as small.
    at.slider(key="floor").set_value(0.5).run()
    assert not at.exception
    assert page_bytes(at) < PAGE_BYTES_LIMIT


def test_100000_connector_notes_are_summarised_not_drawn_one_by_one(app, service, tmp_path):
    at = open_route(app, service, tmp_path, "/noisy")
    warnings = [seen(w.value) for w in at.warning]
    notes = [w for w in warnings if w.startswith("results[")]
    assert len(notes) == MAX_NOTES
    assert notes[0] == "results[0] (n000000): no text at 'text'; shown empty."
    assert f"… and {HUGE_ROWS - MAX_NOTES:,} more notes from the store, not shown." in warnings
    assert page_bytes(at) < PAGE_BYTES_LIMIT

