"""Texts from stores, logs and other reviewers shown inert on every page (AppTest).

A store on loopback (tests/hostile_service.py) sends ids, scores, breakdown keys and
an error message made of Markdown and HTML; a log and a labelling session carry the
same in message ids, user ids, the session's name and its reviewers. Every element
the page draws as Markdown is rendered the way a browser would (markdown-it, raw
HTML allowed) and must hold no image and no link, and no unescaped `$` (Streamlit
draws maths between two). tests/e2e/test_hostile_browser.py checks the real browser.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from hostile_service import HostileService, markup
from markdown_it import MarkdownIt

from dashboard.database import AppDatabase
from dashboard.display import WORD_JOINER
from dashboard.labels import sampling
from dashboard.logs.retrieval_log import read_log_bytes

SEARCH = "FormSubmitter:query_form-Search"
RENDER = MarkdownIt("commonmark", {"html": True})
LIVE = re.compile(r"<(img|a)\b", re.IGNORECASE)
UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)  # maths is not read inside one


@pytest.fixture(scope="module")
def service():
    running = HostileService()
    yield running
    running.stop()


def markdown_bodies(at) -> list[tuple[str, str]]:
    """(element, Markdown source) of everything the page draws as Markdown."""
    found = []
    for kind in ("markdown", "caption", "warning", "error", "info", "success", "subheader", "header", "title"):
        found += [(kind, element.value) for element in getattr(at, kind)]
    for kind in ("metric", "expander", "button", "tabs", "text_input", "selectbox", "checkbox", "radio"):
        found += [(f"{kind} label", element.label) for element in getattr(at, kind)]
    found += [("radio option", option) for radio in at.radio for option in radio.options]
    return found


def assert_inert(at, hostile: str) -> list[str]:
    """No element of the page is live; returns the Markdown sources that showed
    the hostile text (so a test can check it was shown at all)."""
    assert not at.exception, at.exception
    showing = []
    needle = "Re-login here"
    for kind, source in markdown_bodies(at):
        rendered = RENDER.render(source)
        assert not LIVE.search(rendered), (kind, source, rendered)
        assert not UNESCAPED_DOLLAR.search(CODE_SPAN.sub("", source)), (kind, source)
        if needle in source.replace("\\", "").replace(WORD_JOINER, ""):
            showing.append(source)
    assert hostile  # the caller names what it planted
    return showing


def inspect(app, service, tmp_path, route):
    at = app(store="http_json", cfg_http_json_config_path=str(service.write_config(tmp_path, route)))
    at.run()
    at.text_input(key="query").input("What does the user like?")
    at.button(key=SEARCH).click().run()
    return at


def test_ids_scores_and_breakdown_keys_from_a_store_are_inert_on_inspect(app, service, tmp_path, monkeypatch):
    # a named reviewer, as a deployment sets one: Inspect then draws the label rows too
    monkeypatch.setenv("MEMLENS_REVIEWER", "reviewer")
    at = inspect(app, service, tmp_path, "/markup")
    shown = assert_inert(at, markup(service.url, "id"))
    # the hostile id is on the page (label row, notes), as its characters
    assert len(shown) >= 2, shown
    notes = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "m-2" in notes and "no number at 'score'" in notes  # the connector's notes are shown
    assert not service.fetched


def test_a_store_error_message_is_inert_on_inspect(app, service, tmp_path):
    at = inspect(app, service, tmp_path, "/rejects")
    shown = assert_inert(at, markup(service.url, "400"))
    assert [s for s in shown if s.startswith("The store could not answer")], [e.value for e in at.error]


HOSTILE_MESSAGE = "m`1`` <img src=x>"
HOSTILE_USER = "u`` [bob](http://evil.example/)"
HOSTILE_SESSION = "![pic](http://evil.example/leak.png) [Re-login here](http://evil.example/)"
HOSTILE_REVIEWER = "[bob](http://evil.example/) $x$"


def test_log_ids_session_names_and_reviewers_are_inert_on_label(data_dir, demo_store):
    from streamlit.testing.v1 import AppTest

    row = {"message_id": HOSTILE_MESSAGE, "memory_id": "sam-01", "rank": 1, "score": 0.8, "user_id": HOSTILE_USER}
    log = read_log_bytes((json.dumps(row) + "\n").encode(), "hostile.jsonl")
    assert len(log.rows) == 1, log.issue_lines()
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        sampling.save_session(db, HOSTILE_SESSION, log.rows, method="turns", size=1, seed=1,
                              reviewers=[HOSTILE_REVIEWER, "ana"], source=HOSTILE_SESSION)
    finally:
        db.close()
    page = str(Path(__file__).resolve().parents[2] / "dashboard" / "views" / "label.py")
    at = AppTest.from_file(page, default_timeout=180)
    at.session_state["label_reviewer"] = "ana"
    at.session_state["label_session"] = HOSTILE_SESSION
    at.run()
    shown = assert_inert(at, HOSTILE_SESSION)
    assert any("reviewers:" in s for s in shown), shown  # the session's reviewer list
    # message and user ids stay inside their code spans, whole
    [caption] = [c.value for c in at.caption if c.value.startswith("message ")]
    codes = re.findall(r"<code>(.*?)</code>", RENDER.render(caption))
    assert [html.unescape(c) for c in codes] == [HOSTILE_MESSAGE, HOSTILE_USER]
