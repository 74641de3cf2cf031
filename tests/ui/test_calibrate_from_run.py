"""Calibrate from a saved run (issue 20, item 9): every question of the run's judged
set is answerable, so questions whose hits hold no relevant memory are retrieval
misses, not "turns with no relevant memory (the right outcome)"; the judged set's
users and tags reach the rows, so floors per segment are offered; and at a 5%
relevant share both histograms show (each label's hits as a share of that label)."""

from __future__ import annotations

import json

from markdown_text import seen
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


def test_a_run_reaches_calibrate_with_its_clock_score_space_full_floor_and_no_text(app, data_dir, monkeypatch):
    """The hand-over "a run to Calibrate" (issue 34): a run that ranked the demo store
    as it was 40 days ago, keeping its query text, opened on Calibrate in a new
    browser session. The floor JSON names the run's clock and the store's score space,
    holds the floor of exactly the run's judged hits to the last digit, and no query
    text; the page says the clock and that the text stays with the run."""
    from datetime import UTC, datetime, timedelta

    from dashboard.calibration.sweep import calibrate
    from dashboard.database import open_app_database
    from dashboard.evaluation.export import judged_label_file

    monkeypatch.setenv("MEMLENS_REVIEWER", "reviewer")
    clock = (datetime.now(UTC) - timedelta(days=40)).replace(microsecond=0).isoformat()
    quality = app()
    quality.switch_page("quality.py").run()
    quality.number_input(key="eval_k").set_value(5).run()
    quality.checkbox(key="eval_keep_text").check().run()
    quality.text_input(key="eval_as_of").set_value(clock).run()
    quality.text_input(key="eval_run_name").set_value("forty days ago").run()
    quality.button(key="eval_start").click().run()
    assert not quality.exception, quality.exception

    db = open_app_database({"MEMLENS_DATA_DIR": str(data_dir)})
    (info,) = db.runs.all()
    assert info.as_of == clock and info.keep_text
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    assert judged is not None
    labels = judged_label_file(info, db.runs.outcomes(info.run_id), judged)
    scores = labels.labelled_scores()
    expected = calibrate(scores, resamples=0).recommendation

    at = app()  # a new browser session: nothing of the Quality page's in it
    at.switch_page("calibrate.py").run()
    at.radio(key="calibrate_source").set_value("A saved run").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="calibrate_run").value == info.run_id
    exported = json.loads(at.json[0].value)
    assert exported["filters"] == {"run": info.run_id, "as_of": clock}  # the clock
    assert exported["score_space"] == {"store": "embedded", "formula": "as sent", "setting": None}  # the space
    assert exported["floor"] == expected.floor and exported["label_count"] == len(scores)  # the floor, to the last digit
    text = json.dumps(exported)
    assert not [q.query for q in judged.questions if q.query in text]  # the text stayed with the run
    said = next(seen(c.value) for c in at.caption if c.value.startswith("The hits of run"))
    assert f"ranked as of {clock}" in said and "its query text is kept with the run, not in these exports" in said
