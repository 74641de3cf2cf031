"""The Calibrate page in AppTest: demo labels on first open, every chart filled, the
Inspect floor marked, labels from the store with filters, and the cost control."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from markdown_text import error_texts, seen

from dashboard.calibration.sweep import calibrate, format_floor
from dashboard.database import AppDatabase
from dashboard.demo import load_demo_labels

PAGE = "calibrate.py"
CHART_KEYS = ("histogram", "trade-off", "precision/recall", "no memory")


def open_calibrate(app, **state):
    at = app(**state)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def values(encoded) -> np.ndarray:
    """A trace's x or y as plotted: plotly sends numpy arrays as base64 typed arrays."""
    if isinstance(encoded, dict) and "bdata" in encoded:
        return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"])
    return np.asarray(encoded if encoded is not None else [])


def figures(at) -> list[dict]:
    return [json.loads(element.proto.spec) for element in at.get("plotly_chart")]


def vertical_lines(figure: dict) -> set[float]:
    return {round(shape["x0"], 6) for shape in figure["layout"].get("shapes", []) if shape["type"] == "line"}


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def test_opens_on_the_demo_labels_with_every_chart_filled(app):
    at = open_calibrate(app)
    assert any("Demo data" in info.value for info in at.info)
    demo = load_demo_labels()
    expected = calibrate(demo.labelled_scores(), [0.15, 0.2, 0.25, 0.3, 0.35, 0.4], 1.0)
    data = expected.data

    # the four floor charts, then the held-out comparison of the turn rules (test_calibrate_rules_page.py)
    charts, rules = figures(at)[: len(CHART_KEYS)], figures(at)[len(CHART_KEYS) :]
    assert len(charts) == len(CHART_KEYS)
    assert [f["layout"]["title"]["text"] for f in rules] == ["Held-out precision and recall: the single floor and each turn rule"]
    histogram, tradeoff, precision_recall, no_memory = charts
    relevant, irrelevant = (values(trace["x"]) for trace in histogram["data"])
    assert sorted(relevant) == sorted(data.scores[data.relevant])
    assert sorted(irrelevant) == sorted(data.scores[~data.relevant])
    for figure in (tradeoff, precision_recall, no_memory):
        for trace in figure["data"]:
            x, y = values(trace["x"]), values(trace["y"])
            assert len(x) == len(expected.sweep) and len(y) == len(x), trace["name"]
            assert np.isfinite(y.astype(float)).any(), trace["name"]
    kept_irrelevant = values(tradeoff["data"][0]["y"])
    np.testing.assert_array_equal(kept_irrelevant, expected.sweep.kept_irrelevant)

    recommended = expected.recommendation.floor
    for figure in charts:  # the Inspect floor (default 0.35) and the recommendation on every chart
        assert vertical_lines(figure) == {0.35, round(recommended, 6)}
    assert metric(at, "Labelled hits") == str(len(data))
    assert metric(at, "Recommended floor") == format_floor(recommended)
    assert at.code[0].value == f"MEMORY_SCORE_FLOOR={format_floor(recommended)}"
    assert len(at.dataframe[0].value) == len(expected.sweep)
    if expected.band:
        assert any("Separating band" in s.value for s in at.success)


def test_the_floor_set_on_inspect_is_marked_and_kept(app):
    at = open_calibrate(app, floor=0.3)
    for figure in figures(at)[: len(CHART_KEYS)]:  # the floor charts (the turn rules' chart has no floor axis)
        assert 0.3 in vertical_lines(figure)
        assert any(a.get("text") == "Inspect floor 0.30" for a in figure["layout"]["annotations"])
    assert metric(at, "Inspect floor") == "0.30"
    at.run()
    at.switch_page("inspect.py").run()
    assert at.slider(key="floor").value == 0.3  # still there on the return to Inspect


def label(db, message, memory, value, score, reviewer="ana", where="embedded:aaaa1111"):
    db.labels.save(message_id=message, memory_id=memory, label=value, reviewer=reviewer, store=where, score=score, rank=1)


@pytest.fixture
def labelled(data_dir):
    """Own labels in the data dir: the hand-built case of test_calibration.py, by ana,
    plus two labels by ben on another store."""
    db = AppDatabase(data_dir / "labels.sqlite")
    for i, score in enumerate([0.1, 0.2, 0.3, 0.5]):
        label(db, f"m{i}", "off", "not_relevant", score)
    for i, score in enumerate([0.25, 0.4, 0.6, 0.7]):
        label(db, f"m{i}", "on", "relevant", score)
    label(db, "m9", "x", "relevant", 0.9, reviewer="ben", where="mem0:bbbb2222")
    label(db, "m9", "y", "not_relevant", 0.05, reviewer="ben", where="mem0:bbbb2222")
    db.close()
    return data_dir


def test_labels_from_the_store_replace_the_demo_and_filter_by_reviewer_and_store(app, labelled):
    at = open_calibrate(app)
    assert not any("Demo data" in info.value for info in at.info)
    assert metric(at, "Labelled hits") == "10"
    at.selectbox(key="calibrate_reviewer").select("ana").run()
    assert metric(at, "Labelled hits") == "8"
    at.selectbox(key="calibrate_reviewer").select("(all)").run()
    at.selectbox(key="calibrate_store").select("mem0:bbbb2222").run()
    assert metric(at, "Labelled hits") == "2"
    assert not at.exception


def test_the_cost_ratio_moves_the_recommended_floor(app, labelled):
    at = open_calibrate(app)
    at.selectbox(key="calibrate_reviewer").select("ana").run()
    assert float(metric(at, "Recommended floor")) <= 0.25  # a tie at cost 2 goes to the lowest floors
    at.number_input(key="cost_ratio").set_value(3.0).run()
    assert metric(at, "Recommended floor (cost ratio 3)") == "0.55"
    assert at.code[0].value == "MEMORY_SCORE_FLOOR=0.55"
    assert not any("Separating band" in s.value for s in at.success)


def test_labels_of_one_class_only_show_why_they_cannot_calibrate(app, data_dir):
    db = AppDatabase(data_dir / "labels.sqlite")
    label(db, "m1", "a", "relevant", 0.5)
    label(db, "m2", "b", "relevant", 0.7)
    db.close()
    at = open_calibrate(app)
    # the next step to take, not a fault: a warning, and no error box
    assert any("All 2 labelled rows are 'relevant'" in seen(w.value) for w in at.warning)
    assert not error_texts(at)
    assert not at.get("plotly_chart")


def test_an_unreachable_label_database_is_reported_in_the_page(app, monkeypatch):
    monkeypatch.setenv("MEMLENS_LABELS_URL", "postgresql://memlens@127.0.0.1:9/labels?connect_timeout=2")
    at = open_calibrate(app)
    assert any("The label store cannot be read" in e for e in error_texts(at))
    assert not at.get("plotly_chart")


UPLOAD = "\n".join(
    [
        '{"message_id": "m1", "memory_id": "a", "score": 0.8, "label": "relevant"}',
        '{"message_id": "m1", "memory_id": "b", "score": 0.3, "label": "not_relevant"}',
        "{broken",
        '{"message_id": "m2", "memory_id": "a", "score": "high", "label": "relevant"}',
        '{"message_id": "m2", "memory_id": "b", "score": 0.6, "label": "relevant"}',
        '{"message_id": "m1", "memory_id": "a", "score": 0.1, "label": "not_relevant"}',
        '{"message_id": "m2", "memory_id": "c", "score": 0.2, "label": "not_relevant"}',
    ]
).encode()


def test_an_uploaded_file_is_validated_by_line_and_its_good_rows_calibrated(app):
    at = open_calibrate(app, calibrate_source="Upload a file")
    at.file_uploader(key="calibrate_upload").set_value(("team.jsonl", UPLOAD, "application/jsonl")).run()
    assert not at.exception
    assert any("3 problem(s) in team.jsonl: 3 row(s) skipped, 4 usable row(s) used" in seen(w.value) for w in at.warning)
    problems = at.dataframe[0].value
    assert problems["line"].tolist() == [3, 4, 6]
    assert "duplicate of line 1" in problems["problem"].iloc[2]
    assert metric(at, "Labelled hits") == "4"
    assert metric(at, "Turns") == "2"
    assert len(figures(at)) == 4
    assert not any("Demo data" in info.value for info in at.info)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("labels.csv", b"id,relevance\nm1,1\n", "must name the columns 'score' and 'label'"),
        ("labels.jsonl", b'{"score": 0.5, "label": "relevant"}\n\xff\n', "not UTF-8"),
    ],
)
def test_an_unusable_upload_says_why(app, name, content, message):
    at = open_calibrate(app, calibrate_source="Upload a file")
    at.file_uploader(key="calibrate_upload").set_value((name, content, "text/plain")).run()
    assert not at.exception
    assert any(message in e for e in error_texts(at))
    assert not at.get("plotly_chart")


def test_an_upload_of_one_class_asks_for_the_other_class(app):
    at = open_calibrate(app, calibrate_source="Upload a file")
    upload = ("labels.jsonl", b'{"score": 0.5, "label": "relevant"}\n', "text/plain")
    at.file_uploader(key="calibrate_upload").set_value(upload).run()
    assert not at.exception
    warned = [seen(w.value) for w in at.warning]
    assert any("The only labelled row is 'relevant'" in w and "'not_relevant'" in w for w in warned), warned
    assert not error_texts(at)
    assert not at.get("plotly_chart")


def test_the_inspect_slider_keeps_its_floor_across_a_visit_to_calibrate(app):
    at = app()
    at.run()
    at.slider(key="floor").set_value(0.3).run()
    at.switch_page(PAGE).run()
    assert metric(at, "Inspect floor") == "0.30"
    at.switch_page("inspect.py").run()
    assert at.slider(key="floor").value == 0.3


def test_an_upload_is_parsed_once_however_often_the_page_reruns(app, monkeypatch):
    from dashboard.calibration import label_files
    from dashboard.ui.widgets import cache

    parsed = []
    real = label_files.parse_label_bytes

    def counting(content, source):
        parsed.append(source)
        return real(content, source=source)

    monkeypatch.setattr(cache, "parse_label_bytes", counting)
    cache._parsed_label_file.clear()
    at = open_calibrate(app, calibrate_source="Upload a file")
    at.file_uploader(key="calibrate_upload").set_value(("again.jsonl", UPLOAD, "application/jsonl")).run()
    at.text_input(key="calibrate_floors").input("0.2, 0.3").run()
    at.number_input(key="cost_ratio").set_value(3.0).run()
    assert not at.exception
    assert metric(at, "Labelled hits") == "4"
    assert parsed == ["again.jsonl"]
    # Different content under the same name is parsed again.
    at.file_uploader(key="calibrate_upload").set_value(("again.jsonl", UPLOAD + b"\n", "application/jsonl")).run()
    assert parsed == ["again.jsonl", "again.jsonl"]


def test_editing_the_floor_list_keeps_the_recommendation_and_its_interval(app):
    demo = load_demo_labels().labelled_scores()
    at = open_calibrate(app)
    at.text_input(key="calibrate_floors").input("0.1, 0.5, 0.65").run()
    assert not at.exception
    expected = calibrate(demo, [0.1, 0.5, 0.65], 1.0).recommendation
    assert metric(at, "Recommended floor") == format_floor(expected.floor)
    assert at.code[0].value == f"MEMORY_SCORE_FLOOR={format_floor(expected.floor)}"
    assert at.session_state["_calibration_memo"][1].recommendation == expected
    # The listed floors are there in the counts.
    requested = at.session_state["_calibration_memo"][1].requested
    assert list(np.round(requested.floor, 2)) == [0.1, 0.5, 0.65]


def test_an_uploaded_export_of_a_two_reviewer_session_counts_each_pair_once(app, data_dir):
    from dashboard.labels import export

    db = AppDatabase(data_dir / "export-source.sqlite")
    for reviewer, label in (("ana", "relevant"), ("ben", "not_relevant")):
        db.labels.save(message_id="m1", memory_id="a", label=label, reviewer=reviewer, store="embedded:1", rank=1, score=0.6)
        db.labels.save(message_id="m1", memory_id="b", label="not_relevant", reviewer=reviewer, store="embedded:1", rank=2, score=0.2)
    db.labels.save(message_id="m2", memory_id="c", label="relevant", reviewer="ana", store="embedded:1", rank=1, score=0.5)
    content = export.to_jsonl(db.labels.find()).encode()
    db.close()
    at = open_calibrate(app, calibrate_source="Upload a file")
    at.file_uploader(key="calibrate_upload").set_value(("session.jsonl", content, "application/jsonl")).run()
    assert not at.exception
    assert not any("problem(s)" in w.value for w in at.warning), [w.value for w in at.warning]
    # m1/a is a tie (ana relevant, ben not): unresolved, left out, and the page says so
    assert metric(at, "Labelled hits") == "2"
    assert any("1 pair(s) tied" in seen(c.value) for c in at.caption)


def test_floors_outside_zero_to_one_are_left_out_with_a_message_naming_them(app):
    at = open_calibrate(app)
    at.text_input(key="calibrate_floors").input("0.2, 2, -1, abc").run()
    assert not at.exception
    warning = next(seen(w.value) for w in at.warning if "Left out of the floor list" in w.value)
    assert "'2' is outside [0, 1]" in warning and "'-1' is outside [0, 1]" in warning and "'abc' is not a number" in warning
    requested = at.session_state["_calibration_memo"][1].requested
    assert list(np.round(requested.floor, 2)) == [0.2]
