"""A session to Calibrate (issue 34): labels made on the Label page, in a session that
kept the message text, reach Calibrate in a new browser session with their score space
(the store they were labelled on, named in the floor JSON), the floor those labels give,
and no message text in the floor JSON though the session held it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.calibration.label_files import from_labels
from dashboard.calibration.sweep import calibrate
from dashboard.database import AppDatabase

ROOT = Path(__file__).resolve().parents[2]
TRUTH = {q["message_id"]: set(q["relevant"]) for q in map(json.loads, (ROOT / "demo_data" / "queries.jsonl").read_text().splitlines())}


# Labels here are saved under a named reviewer, as a deployment names one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("named_reviewer")


def test_a_sessions_labels_reach_calibrate_with_their_score_space_and_no_text(app, data_dir):
    at = app()
    at.run()
    at.switch_page("label.py").run()
    at.button(key="log_read").click().run()
    at.text_input(key="session_name").input("handover week")
    at.selectbox(key="sample_method").select("turns")
    at.number_input(key="sample_size").set_value(8)
    at.checkbox(key="session_keep_text").check()
    at.button(key="FormSubmitter:session_form-Create session").click().run()
    assert not at.exception, at.exception
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        items = db.sessions.items("handover week")
        assert items and all(item.query_text for item in items)
        for item in items:
            at.button(key="label_relevant" if item.memory_id in TRUTH[item.message_id] else "label_not_relevant").click().run()
            assert not at.exception, at.exception
        made = db.sessions.labels("handover week")
    finally:
        db.close()
    assert len(made) == len(items)

    calibrate_page = app()
    calibrate_page.run()
    calibrate_page.switch_page("calibrate.py").run()
    assert not calibrate_page.exception, calibrate_page.exception
    exported = json.loads(calibrate_page.json[0].value)
    expected = calibrate(from_labels(made).labelled_scores(), resamples=0).recommendation
    assert exported["label_count"] == len(made)
    assert exported["floor"] == expected.floor  # the floor of exactly the session's labels
    assert exported["score_space"] == {"store": "embedded", "formula": "as sent", "setting": None}
    text = json.dumps(exported)
    assert not any(item.query_text in text for item in items if item.query_text)
