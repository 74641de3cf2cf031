"""Monitor to Label (issue 34): a labelling session drawn from a Monitor window keeps
the log's message text when the reviewer opts in (and only then), and records the
store it was drawn on, so the Label page shows the text and does not call a session
made seconds earlier older than memlens recording the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markdown_text import seen

from dashboard.database import AppDatabase
from dashboard.ui.pages.monitor import UPLOAD_CHOICE

SAMPLE_LOG = Path(__file__).resolve().parents[2] / "demo_data" / "sample_log.jsonl"
QUERIES = {row["message_id"]: row["query"] for row in map(json.loads, SAMPLE_LOG.read_text(encoding="utf-8").splitlines())}
NO_STORE_NOTE = "drawn before memlens recorded the store"


# Labels here are saved under a named reviewer, as a deployment names one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("named_reviewer")


def page_text(at) -> str:
    """What a reader of the page sees in its text elements."""
    return "\n".join(seen(e.value) for e in [*at.markdown, *at.caption, *at.info, *at.warning, *at.error])


def session_from_monitor(app, name: str, *, keep_text: bool):
    at = app()
    at.run()
    at.switch_page("monitor.py").run()
    at.radio(key="monitor_source").set_value(UPLOAD_CHOICE).run()
    at.file_uploader(key="monitor_upload").set_value(("log.jsonl", SAMPLE_LOG.read_bytes(), "application/jsonl")).run()
    assert not at.exception, at.exception
    at.text_input(key="monitor_session_name").set_value(name)
    at.number_input(key="monitor_session_size").set_value(20)
    at.checkbox(key="monitor_session_keep_text").set_value(keep_text)
    next(b for b in at.button if b.label == "Start a labelling session").click().run()
    assert not at.exception, at.exception
    assert any(f"Session {name!r} created" in seen(s.value) for s in at.success)
    store_shown = next(c.value for c in at.caption if "The session is tied to the store configured in the sidebar" in c.value)
    at.switch_page("label.py").run()
    assert not at.exception, at.exception
    return at, store_shown


def test_a_monitor_session_keeps_the_message_text_when_asked_and_records_its_store(app, data_dir):
    at, store_shown = session_from_monitor(app, "with-text", keep_text=True)
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        (session,) = [s for s in db.sessions.all() if s.name == "with-text"]
        items = db.sessions.items("with-text")
    finally:
        db.close()
    assert session.keep_text and session.drawn_store and session.drawn_store in store_shown
    assert all(item.query_text == QUERIES[item.message_id] for item in items)
    assert at.selectbox(key="label_session").value == "with-text"
    page = page_text(at)
    assert any(query in page for query in QUERIES.values())
    assert "message text not available" not in page
    assert NO_STORE_NOTE not in page


def test_without_the_opt_in_the_session_holds_ids_and_scores_only(app, data_dir):
    at, _ = session_from_monitor(app, "ids-only", keep_text=False)
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        items = db.sessions.items("ids-only")
    finally:
        db.close()
    assert items and all(item.query_text is None for item in items)
    page = page_text(at)
    assert "message text not available" in page and not any(query in page for query in QUERIES.values())
    assert NO_STORE_NOTE not in page
