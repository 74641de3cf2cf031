"""The Monitor page in AppTest: the demo's alerts and charts, a floor move recomputed
from the cached turns, and a labelling session from exactly one window's turns."""

from __future__ import annotations

import json

from markdown_text import seen

from dashboard.database import AppDatabase
from dashboard.monitoring.synthetic import DEMO_LOG
from dashboard.ui.widgets import cache

PAGE = "monitor.py"


def open_monitor(app, **state):
    at = app(**state)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_the_demo_shows_its_two_known_changes_as_alerts_with_charts(app):
    at = open_monitor(app)
    alerts = [seen(w.value) for w in at.warning]
    assert any(a.startswith("alert: 2026-01-21: no-memory share") for a in alerts)
    assert any(a.startswith("alert: 2026-01-26: top-1 drift (KS)") for a in alerts)
    figures = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert [f["layout"]["title"]["text"] for f in figures] == ["Turns with no memory at the floor", "Top-1 score per window", "Turns per window"]
    no_memory = figures[0]
    assert len(no_memory["data"][0]["x"]) == DEMO_LOG["days"]
    alert_marks = no_memory["data"][1]["x"]
    assert [mark[:10] for mark in alert_marks] == ["2026-01-21", "2026-01-26"]
    # the window list opens on the first alert
    assert at.selectbox(key="monitor_window").value == "2026-01-21"
    assert at.dataframe[-1].value["message_id"].size == DEMO_LOG["turns_per_day"]


def test_moving_the_floor_recomputes_from_the_cached_turns(app, monkeypatch):
    at = open_monitor(app)
    before = at.metric[2].value
    opened = []
    real = cache.open_logs

    def counting(*args, **kwargs):
        opened.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(cache, "open_logs", counting)
    at.slider(key="monitor_floor").set_value(0.2).run()
    assert not at.exception
    assert at.metric[2].value != before  # the baseline's no-memory share at the new floor
    assert opened == []  # no file was read again
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert any(shape.get("y0") == 0.2 for shape in spec["layout"]["shapes"])


def test_a_session_from_an_alert_window_holds_exactly_its_turns(app, data_dir):
    at = open_monitor(app)
    at.selectbox(key="monitor_window").set_value("2026-01-26").run()
    at.text_input(key="monitor_session_name").set_value("after-the-model-change")
    at.number_input(key="monitor_session_size").set_value(60)
    form_button = next(b for b in at.button if b.label == "Start a labelling session")
    form_button.click().run()
    assert not at.exception, at.exception
    assert any("Session 'after-the-model-change' created: 60 rows" in seen(s.value) for s in at.success)
    db = AppDatabase(data_dir / "labels.sqlite")
    items = db.sessions.items("after-the-model-change")
    turns = set(at.dataframe[-1].value["message_id"])
    assert len(items) == 60 and {item.message_id for item in items} <= turns
    (session,) = [s for s in db.sessions.all() if s.name == "after-the-model-change"]
    assert session.method == "stratified" and session.source == "monitor window 2026-01-26"
    db.close()
