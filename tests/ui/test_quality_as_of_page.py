"""The Quality page's "Rank as of" control: the run ranks at that time (each hit's
recency counted from it), keeps it, shows it in the runs table; a time that is not
ISO 8601 is named and the run cannot start."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from markdown_text import seen

from dashboard.database import open_app_database


def quality_page(app):
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    assert not at.exception, at.exception
    return at


def test_a_run_ranks_at_the_time_asked_and_keeps_it(app, data_dir, demo_store):
    at = quality_page(app)
    at.text_input(key="eval_as_of").set_value("2026-01-01T00:00:00Z").run()
    assert any("The run ranks as of 2026-01-01T00:00:00+00:00." in seen(c.value) for c in at.caption)
    at.number_input(key="eval_k").set_value(5).run()
    at.text_input(key="eval_run_name").set_value("new year").run()
    at.button(key="eval_start").click().run()
    assert not at.exception, at.exception
    assert any("Run **new year** complete" in s.value for s in at.success)
    runs = next(d.value for d in at.dataframe if "status" in d.value.columns)
    assert list(runs["as of"]) == ["2026-01-01T00:00:00+00:00"]

    db = open_app_database({"MEMLENS_DATA_DIR": str(data_dir)})
    (info,) = db.runs.all()
    assert info.as_of == "2026-01-01T00:00:00+00:00"
    at_time = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    half_life_hours = 72.0
    for outcome in db.runs.outcomes(info.run_id)[:10]:
        for hit in outcome.hits:
            created = demo_store.get(hit.memory_id).created_at.timestamp()
            hours = max(at_time - created, 0) / 3600
            assert hit.breakdown["recency"] == pytest.approx(math.exp(-hours * math.log(2) / half_life_hours), rel=1e-6)


def test_a_time_that_is_not_iso_is_named_and_nothing_runs(app, data_dir):
    at = quality_page(app)
    at.text_input(key="eval_as_of").set_value("last week").run()
    assert any("Rank as of: 'last week' is not an ISO 8601 time" in seen(e.value) for e in at.error)
    assert at.button(key="eval_start").disabled
