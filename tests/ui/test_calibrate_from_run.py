"""Calibrate from a saved run (issue 20, item 9): every question of the run's judged
set is answerable, so questions whose hits hold no relevant memory are retrieval
misses, not "turns with no relevant memory (the right outcome)"; the judged set's
users and tags reach the rows, so floors per segment are offered; and at a 5%
relevant share both histograms show (each label's hits as a share of that label)."""

from __future__ import annotations

import json

from whatif_runs import rare_relevant_run

from dashboard.database import AppDatabase


def test_a_runs_misses_users_tags_and_rare_relevant_histogram(app, data_dir):
    db = AppDatabase(data_dir / "labels.sqlite")
    info = rare_relevant_run(db)
    db.close()
    at = app()
    at.switch_page("calibrate.py").run()
    at.radio(key="calibrate_source").set_value("A saved run").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="calibrate_run").value == info.run_id

    turns = next(c.value for c in at.caption if c.value.startswith("At floor "))
    assert "turns with no relevant memory" not in turns
    assert "10 answerable turn(s) whose hits hold no relevant memory (retrieval misses" in turns
    assert "of the 10 answerable turns" in turns

    assert not any("Floors per segment need labels" in c.value for c in at.caption)
    assert at.selectbox(key="segment_by").options == ["user", "tag (e.g. question category)"]
    at.selectbox(key="segment_by").set_value("tag").run()
    table = next(d.value for d in at.dataframe if "segment" in d.value.columns)
    assert set(table["segment"]) == {"(all segments)", "single-hop", "temporal"}

    histogram = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [trace["histnorm"] for trace in histogram["data"]] == ["percent", "percent"]
    assert [trace["name"] for trace in histogram["data"]] == ["relevant (10 hits)", "not relevant (190 hits)"]
