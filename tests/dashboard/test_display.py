"""How untrusted text is shown: whatever a memory or an id holds, the reader sees its
characters (rendered by a CommonMark renderer, raw HTML allowed), and big JSON is
cut to a size a browser draws at once."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import urlencode

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_text import table_rows

from connectors.base import Hit
from dashboard.display import (
    TABLE_TEXT_CHARS,
    WORD_JOINER,
    bounded_json,
    clip_text,
    code_span,
    hits_frame,
    hits_markdown_table,
    inert_link,
    inert_list,
    inert_markdown,
)

RENDER = MarkdownIt("commonmark", {"html": True})
# One line of text from any script; line ends are Markdown's own business (a code
# span turns them into spaces, inert_markdown into line breaks).
ONE_LINE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=40)
MARKUP = st.text(alphabet="<>/&*_`[]()!#|~$:\\-+=. \"'abc", max_size=30) | st.sampled_from(
    [":material/home:", ":material_home:", ":streamlit:", ":smile: :tada:", ":red[alarm]", "$x^2$",
     "http://evil.example/x", "WWW.evil.example", "me@evil.example"]
)


def shown(source: str) -> str:
    rendered = RENDER.render(source)
    # the invisible word joiner inert_markdown puts into `:name:` shortcodes aside
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip("\n").replace(WORD_JOINER, "")


@settings(max_examples=300, deadline=None)
@given(st.one_of(ONE_LINE, MARKUP))
def test_inert_markdown_shows_exactly_the_characters(text):
    rendered = RENDER.render(inert_markdown(text))
    assert [tag for tag in re.findall(r"<(\w+)", rendered) if tag not in ("p", "br")] == []
    # A renderer drops a paragraph's leading and trailing blanks; nothing else changes.
    assert shown(inert_markdown(text)).strip() == text.strip().replace(WORD_JOINER, "")


@settings(max_examples=300, deadline=None)
@given(st.one_of(ONE_LINE, MARKUP).filter(lambda s: s.strip()))
def test_code_span_holds_any_id_in_one_code_element(memory_id):
    rendered = RENDER.render(f"**#1** {code_span(memory_id)} · 0.5")
    code = re.findall(r"<code>(.*?)</code>", rendered)
    assert [html.unescape(c) for c in code] == [memory_id]
    assert rendered.count("<strong>") == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(ONE_LINE, MARKUP), min_size=1, max_size=3).map("\n\n".join).filter(lambda s: s.strip()))

def test_code_span_keeps_text_with_blank_lines_in_one_code_element(text):
    """A blank line would end the paragraph before the span closed: the rest was read
    as Markdown (a heading, a list, a live link). The span shows the lines joined."""
    rendered = RENDER.render(f"note {code_span(text)} end")
    assert rendered.count("<p>") == 1, rendered
    assert not re.search(r"<(?!/?(p|code)\b)\w", rendered), rendered
    code = re.findall(r"<code>(.*?)</code>", rendered, re.DOTALL)
    assert [" ".join(html.unescape(c).split()) for c in code] == [" ".join(text.split())]


def test_inert_list_draws_one_plain_bullet_per_item():
    items = ["line 3: bad JSON", "# not a heading\n\n![img](http://evil.example/x.png)", "- [x] **bold**"]
    rendered = RENDER.render(inert_list(items))
    assert rendered.count("<li>") == 3
    assert not re.search(r"<(img|a|h1|strong|input)\b", rendered), rendered
    assert [shown(inert_list([item])).strip() for item in items] == [" ".join(item.split()) for item in items]


def test_inert_link_links_to_a_page_of_memlens_with_its_text_inert():
    url = "/inspect?" + urlencode({"query": "a) b](c", "user": "<u>"})
    rendered = RENDER.render(inert_link("[m1](http://evil.example/)", url))
    assert [html.unescape(href) for href in re.findall(r"<a href=\"([^\"]*)\">", rendered)] == [url]  # urlencode's characters are kept as they are
    assert shown(inert_link("[m1](http://evil.example/)", url)) == "[m1](http://evil.example/)"
    # anything but this server or http(s) is shown as its text, not linked
    for target in ("javascript:alert(1)", "//evil.example/x", "data:text/html,x"):
        assert "<a " not in RENDER.render(inert_link("m1", target)), target
    # a destination with a space or a bracket stays one link
    odd = "/inspect?q=a b)(<x>"
    assert RENDER.render(inert_link("m1", odd)).count("<a ") == 1


def test_escaping_once_shows_a_url_as_it_is_and_twice_shows_backslashes():
    """Error text goes through inert_markdown once (tests/test_inert_drawing.py refuses
    a second time): a fallback error showed `http\\:⁠//127\\.0\\.0\\.1`."""
    message = "Cannot reach http://127.0.0.1:9/v1: connection refused"
    assert shown(inert_markdown(message)) == message
    assert "\\" in shown(inert_markdown(inert_markdown(message)))


def test_bounded_json_cuts_lists_objects_and_strings_and_says_how_much():
    raw = {"memories": [{"id": f"m{i}", "text": "x" * 5000} for i in range(100_000)], "took_ms": 12}
    bounded, cut = bounded_json(raw, max_items=50, max_chars=100)
    assert cut
    assert len(bounded["memories"]) == 51
    assert bounded["memories"][-1] == "… 99,950 more items not shown"
    assert bounded["memories"][0] == {"id": "m0", "text": "x" * 100 + "…"}
    assert bounded["took_ms"] == 12
    assert len(json.dumps(bounded)) < 10_000
    wide, cut = bounded_json({str(i): i for i in range(300)}, max_items=100)
    assert cut and len(wide) == 101 and wide["…"] == "200 more keys not shown"


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
        lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=5), children, max_size=6),
        max_leaves=40,
    )
)
def test_bounded_json_leaves_small_json_exactly_as_it_was(value):
    bounded, cut = bounded_json(value, max_items=100, max_chars=100)
    assert not cut and bounded == value


def test_clip_text_marks_a_cut_and_leaves_short_text_alone():
    assert clip_text("short", 10) == ("short", False)
    assert clip_text("x" * 11, 10) == ("x" * 10 + "…", True)


def test_hits_frame_shows_components_and_floor_status_only_when_asked():
    hits = [
        Hit("m1", 1, "x" * 1_000, 0.9, breakdown={"semantic": 0.8, "recency": 0.5}),
        Hit("m2", 2, "short", 0.4, raw_score=0.6, breakdown={"importance": 0.2}),
    ]
    inspect = hits_frame(hits, {"m1"}, breakdown=True)
    assert list(inspect.columns[:4]) == ["rank", "memory id", "text", "score"]
    assert set(inspect.columns[4:]) == {"semantic", "recency", "importance", "raw score", "status"}
    assert list(inspect["status"]) == ["kept", "dropped"]
    assert len(inspect["text"][0]) == TABLE_TEXT_CHARS + 1  # clipped, with an ellipsis
    assert inspect["raw score"].isna()[0] and inspect["raw score"][1] == 0.6  # only where it differs
    browse = hits_frame(hits)
    assert list(browse.columns) == ["rank", "memory id", "text", "score", "raw score"]  # no components, no status


# Any text a store may hold, line breaks and table pipes included.
STORE_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=60) | MARKUP


@settings(max_examples=200, deadline=None)
@given(memory_id=STORE_TEXT, text=STORE_TEXT)
def test_the_markdown_hits_table_shows_each_hit_on_its_own_row_as_plain_text(memory_id, text):
    hits = [Hit(memory_id, 1, text, 0.5), Hit("m2", 2, "short", None)]
    table = hits_markdown_table(hits, {"m2"})
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(table)
    # A table and nothing else: no link, picture, emphasis or HTML from a memory.
    assert set(re.findall(r"<(\w+)", rendered)) <= {"table", "thead", "tbody", "tr", "th", "td"}
    rows = table_rows(table)
    assert [row["rank"] for row in rows] == ["1", "2"]
    assert [row["status"] for row in rows] == ["dropped", "kept"]
    assert [row["score"] for row in rows] == ["0.500", "-"]
    # The cell holds the text with its runs of blanks and line breaks as one space
    # (and a NUL as U+FFFD, as every CommonMark renderer, Streamlit's included, shows it).
    def shown(value: str) -> str:
        return " ".join(value.split()).replace("\x00", "\ufffd")

    assert rows[0]["memory id"] == shown(memory_id)
    assert rows[0]["text"] == shown(clip_text(text, TABLE_TEXT_CHARS)[0])
