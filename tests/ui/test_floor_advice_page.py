"""The Calibrate page's floor advice in AppTest: on rare, overlapping labels the
diagnosis and its warnings stand above the recommendation, the mode picker moves the
recommended and exported floor, answerable turns are counted apart, and the floors
per tag come with intervals and a warning for the small segment."""

from __future__ import annotations

import json

import numpy as np
from markdown_text import seen
from sklearn.metrics import average_precision_score, roc_auc_score

from dashboard.calibration.choice import FBETA, TARGET_PRECISION, TARGET_RECALL, choose
from dashboard.calibration.label_files import parse_label_bytes
from dashboard.calibration.report import UNKNOWN_SPACE_HEAD, unknown_space_caption
from dashboard.calibration.sweep import calibrate, format_floor
from dashboard.runtime import FloorConfig
from tests.dashboard.calibration.test_calibrate_advice_cli import write_rare_labels
from tests.ui.test_calibrate_page import figures, metric, open_calibrate, values


def upload_rare(app, tmp_path, **state):
    path = tmp_path / "benchmark-labels.jsonl"
    scores, relevant = write_rare_labels(path)
    at = open_calibrate(app, calibrate_source="Upload a file", **state)
    at.file_uploader(key="calibrate_upload").set_value((path.name, path.read_bytes(), "application/jsonl")).run()
    assert not at.exception, at.exception
    return at, path, scores, relevant


def markdown_of(elements) -> list[str]:
    return [seen(element.value) for element in elements]


def test_rare_overlapping_labels_show_the_diagnosis_and_warnings_above_the_recommendation(app, tmp_path):
    at, path, scores, relevant = upload_rare(app, tmp_path)
    expected = calibrate(parse_label_bytes(path.read_bytes(), path.name).labelled_scores(), resamples=0)
    rec = expected.recommendation
    assert rec.dropped_relevant > relevant.sum() / 2  # cost ratio 1 turns memory off...

    warnings = markdown_of(at.warning)
    # ... and the page says so, with the numbers.
    assert any(f"drops {rec.dropped_relevant} of {relevant.sum()} relevant memories" in w for w in warnings)
    assert any(w.startswith("At every floor that keeps 90% of relevant memories, at least") for w in warnings)
    assert any("of answerable turns (turns with a relevant memory) with no memory at all" in w for w in warnings)
    assert metric(at, "ROC AUC") == f"{roc_auc_score(relevant, scores):.2f}"
    assert metric(at, "Average precision") == f"{average_precision_score(relevant, scores):.2f}"
    # Cost ratio 1 drops most relevant memories: the default floor follows target recall 0.90
    recall_floor = choose(expected.data, TARGET_RECALL, 0.9).floor
    assert recall_floor is not None
    assert metric(at, "Recommended floor (target recall 0.90)") == format_floor(recall_floor)

    # The diagnosis is drawn before the recommendation.
    labels_in_order = [m.label for m in at.metric]
    assert labels_in_order.index("ROC AUC") < labels_in_order.index("Recommended floor (target recall 0.90)")
    assert any("answerable turns" in c.value and "turns with no relevant memory" in c.value for c in at.caption)
    # The no-memory chart draws answerable turns (a loss) and the others apart; a label
    # file does not say whether those others had an answer, so they are not called right.
    assert any("unknown whether right: the labels do not say" in c.value for c in at.caption)
    no_memory = figures(at)[3]
    names = [trace["name"] for trace in no_memory["data"]]
    assert names == ["turns with no memory", "answerable (a loss)", "no relevant memory labelled (answer unknown)"]
    answerable = values(no_memory["data"][1]["y"])
    assert answerable[0] == 0 and answerable[-1] > 0.9  # the lowest floor keeps a memory in every turn


def test_the_default_floor_follows_target_recall_when_the_cost_ratio_empties_prompts(app, tmp_path):
    """As memlens calibrate does: the page's headline and export floor at the default cost
    ratio follow target recall 0.90 where the cost-ratio floor drops more than half of
    the relevant labels, say why, name the cost-ratio floor; ticked, the cost ratio wins."""
    at, path, scores, relevant = upload_rare(app, tmp_path)
    data = parse_label_bytes(path.read_bytes(), path.name).labelled_scores()
    rec = calibrate(data, resamples=0).recommendation
    recall_floor = choose(data, TARGET_RECALL, 0.9).floor
    assert recall_floor is not None and rec.floor > recall_floor
    assert metric(at, "Recommended floor (target recall 0.90)") == format_floor(recall_floor)
    assert at.code[0].value == f"MEMORY_SCORE_FLOOR={format_floor(recall_floor)}"
    assert (scores[relevant] >= recall_floor).mean() >= 0.9
    why = next(w for w in markdown_of(at.warning) if w.startswith("MEMORY_SCORE_FLOOR follows target recall 0.90"))
    assert f"the cost-ratio floor {format_floor(rec.floor)} (cost ratio 1) drops {rec.dropped_relevant:,} of {int(relevant.sum()):,}" in why
    exported = json.loads(at.json[0].value)
    assert exported["floor"] == recall_floor and exported["mode"] == "target_recall"
    assert exported["fallback"] == why.rstrip(".")

    at.checkbox(key="cost_ratio_as_asked").check().run()
    assert not at.exception, at.exception
    assert metric(at, "Recommended floor (cost ratio 1)") == format_floor(rec.floor)
    assert at.code[0].value == f"MEMORY_SCORE_FLOOR={format_floor(rec.floor)}"
    assert not any(w.startswith("MEMORY_SCORE_FLOOR follows") for w in markdown_of(at.warning))

    at.number_input(key="cost_ratio").set_value(2.0).run()  # another cost ratio is asked for: exported as asked
    assert any(m.label == "Recommended floor (cost ratio 2)" for m in at.metric)


def test_target_precision_out_of_reach_and_max_fbeta(app, tmp_path):
    at, path, scores, relevant = upload_rare(app, tmp_path, cost_ratio_as_asked=True)
    data = parse_label_bytes(path.read_bytes(), path.name).labelled_scores()
    cost_floor = metric(at, "Recommended floor (cost ratio 1)")
    at.radio(key="floor_mode").set_value(TARGET_PRECISION).run()
    at.slider(key="target_precision").set_value(0.95).run()
    assert not at.exception, at.exception
    assert metric(at, "Recommended floor (target precision 0.95)") == cost_floor
    assert any(
        w.startswith("No floor reaches target precision 0.95; the exported floor is the cost-ratio one") for w in markdown_of(at.warning)
    )
    assert any(seen(c.value).startswith("Target precision 0.95: no floor reaches it (best") for c in at.caption)

    at.radio(key="floor_mode").set_value(FBETA).run()
    at.number_input(key="fbeta_beta").set_value(2.0).run()
    chosen = choose(data, FBETA, 2.0)
    assert chosen.floor is not None
    assert metric(at, "Recommended floor (max F2)") == format_floor(chosen.floor)
    assert at.code[0].value == f"MEMORY_SCORE_FLOOR={format_floor(chosen.floor)}"


def test_target_recall_mode_moves_the_recommended_and_exported_floor(app, tmp_path):
    at, path, scores, relevant = upload_rare(app, tmp_path)
    at.radio(key="floor_mode").set_value(TARGET_RECALL).run()
    assert not at.exception, at.exception
    data = parse_label_bytes(path.read_bytes(), path.name).labelled_scores()
    chosen = choose(data, TARGET_RECALL, 0.9)
    assert chosen.floor is not None
    assert metric(at, "Recommended floor (target recall 0.90)") == format_floor(chosen.floor)
    kept = scores >= chosen.floor
    assert (kept & relevant).sum() >= 0.9 * relevant.sum()
    assert at.code[0].value == f"MEMORY_SCORE_FLOOR={format_floor(chosen.floor)}"
    # The JSON behind the floor says how it was chosen, and carries the warnings.
    exported = json.loads(at.json[0].value)
    assert (exported["mode"], exported["target"], exported["floor"]) == ("target_recall", 0.9, chosen.floor)
    assert any(w.startswith("At every floor that keeps 90%") for w in exported["warnings"])
    assert exported["at_floor"]["dropped_relevant"] == int((~kept & relevant).sum())

    at.slider(key="target_recall").set_value(0.75).run()
    lower = choose(data, TARGET_RECALL, 0.75).floor
    assert lower is not None
    assert metric(at, "Recommended floor (target recall 0.75)") == format_floor(lower)


def test_floors_per_tag_with_intervals_and_a_warning_for_the_small_segment(app, tmp_path):
    at, *_ = upload_rare(app, tmp_path, cost_ratio_as_asked=True)  # the cost ratio's floors per tag
    assert at.selectbox(key="segment_by").value == "tag"
    table = next(frame.value for frame in at.dataframe if "segment" in frame.value.columns)
    assert table["segment"].tolist()[0] == "(all segments)"
    assert set(table["segment"].tolist()[1:]) == {"temporal", "multi-hop", "single-hop", "open", "rare-category"}
    assert table["labels"].tolist()[0] == sum(table["labels"].tolist()[1:])
    # every segment has its interval but the rare category's 6 turns, too few for one (issue 53)
    rare = table["segment"] == "rare-category"
    assert np.isfinite(table["interval_low"][~rare].astype(float)).all()
    assert table["interval_low"][rare].isna().all()
    assert table["note"][rare].str.endswith("no interval: the labels hold 6 turns, fewer than the 10 a bootstrap of turns needs").all()
    assert any("- segment tag=rare-category: too few labels for a stable floor: 2 relevant" in seen(w) for w in markdown_of(at.warning))
    # the floor JSON carries the floors an agent can trust; the small segment falls back to the global floor
    exported = json.loads(at.json[0].value)
    stable = {row.segment: row.floor for row in table.itertuples() if not row.note and row.segment != "(all segments)"}
    assert exported["segments"] == {"tag": stable} and "rare-category" not in stable
    config_path = tmp_path / "memlens-floor.json"
    config_path.write_text(json.dumps(exported), encoding="utf-8")
    config = FloorConfig.load(config_path)
    tag, floor = next(iter(stable.items()))
    assert config.floor_for(tag=tag) == (floor, f"tag={tag}")
    assert config.floor_for(tag="rare-category") == (exported["floor"], "global")
    # labels naming no store: the space is unknown, and the page says so under the export,
    # with the reason that is true of them (issue 53: it said "several stores, or a distance store")
    assert exported["score_space"] is None and config.score_space is None
    captions = [seen(c.value) for c in at.caption if seen(c.value).startswith(UNKNOWN_SPACE_HEAD)]
    assert captions == [unknown_space_caption([])]
    assert "these labels name no store" in captions[0]
    assert "several stores" not in captions[0] and "distance store" not in captions[0]


def test_the_demo_labels_floor_json_names_the_embedded_stores_score_space(app):
    at = open_calibrate(app)
    assert json.loads(at.json[0].value)["score_space"] == {"store": "embedded", "formula": "as sent", "setting": None}
    assert not any(seen(c.value).startswith(UNKNOWN_SPACE_HEAD) for c in at.caption)


def test_separating_demo_labels_show_no_diagnosis_warning(app):
    at = open_calibrate(app)
    assert not any(m.label == "ROC AUC" for m in at.metric)
    assert not at.warning
    assert any("Floors per segment need labels" in c.value for c in at.caption)


def test_editing_the_floor_list_keeps_the_advice_and_recounts_the_turns_at_the_new_floors(app, tmp_path):
    at, path, scores, relevant = upload_rare(app, tmp_path)
    at.radio(key="floor_mode").set_value(TARGET_RECALL).run()
    floor = metric(at, "Recommended floor (target recall 0.90)")
    caption = next(c.value for c in at.caption if c.value.startswith("Keeps "))
    at.text_input(key="calibrate_floors").set_value("0.123, 0.5").run()
    assert not at.exception, at.exception
    assert metric(at, "Recommended floor (target recall 0.90)") == floor
    assert next(c.value for c in at.caption if c.value.startswith("Keeps ")) == caption  # the advice does not move with the listed floors
    table = next(frame.value for frame in at.dataframe if "no_memory_share_answerable" in frame.value.columns)
    turns = np.arange(len(scores)) // 10
    answerable = [t for t in set(turns.tolist()) if relevant[turns == t].any()]
    for requested in (0.123, 0.5):
        row = table[table["floor"] == requested].iloc[0]
        empty = [t for t in answerable if not (scores[turns == t] >= requested).any()]
        assert row["no_memory_share_answerable"] == len(empty) / len(answerable)
