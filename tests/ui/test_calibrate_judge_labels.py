"""Calibrate on judge labels in AppTest: the "Label source" choice (people, a judge,
people else the judge) and the judge's agreement with people beside the figures."""

from __future__ import annotations

import json

import pytest
from markdown_text import seen

from dashboard.database import AppDatabase

PAGE = "calibrate.py"
UMBRELA = "judge:umbrela@m"
CE = "judge:ce@mini"


BROKEN = "judge:tiny@gemma-270m"


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


@pytest.fixture
def judged(data_dir):
    """ana's eight labels on one store, an LLM judge that graded three of those pairs
    (two agree) and two pairs nobody else labelled, and a cross-encoder that graded
    only pairs no person labelled."""
    db = AppDatabase(data_dir / "labels.sqlite")
    for i, score in enumerate([0.1, 0.2, 0.3, 0.5]):
        db.labels.save(message_id=f"m{i}", memory_id="off", label="not_relevant", reviewer="ana",
                     store="embedded:aaaa1111", score=score, rank=2)
    for i, score in enumerate([0.25, 0.4, 0.6, 0.7]):
        db.labels.save(message_id=f"m{i}", memory_id="on", label="relevant", reviewer="ana",
                     store="embedded:aaaa1111", score=score, rank=1)
    for message, memory, grade, score in [
        ("m0", "on", 3, 0.25), ("m1", "off", 0, 0.2), ("m2", "on", 1, 0.6),  # also labelled by ana
        ("m5", "x", 3, 0.8), ("m5", "y", 0, 0.1),  # the judge alone
    ]:
        db.judge_labels.save(message_id=message, memory_id=memory, source=UMBRELA, grade=grade,
                            reason="because", store_score=score, rank=1)
    for memory, grade, score in [("z", 2, 0.9), ("w", 0, 0.15)]:
        db.judge_labels.save(message_id="m7", memory_id=memory, source=CE, grade=grade, reason="", store_score=score)
    db.close()
    return data_dir


def open_calibrate(app):
    at = app()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def pick(at, value):
    at.radio(key="calibrate_label_source").set_value(value).run()
    assert not at.exception, at.exception


def agreement_notes(at) -> list[str]:
    return [seen(box.value) for box in [*at.info, *at.warning] if "judge" in box.value]


def floor_json(at) -> dict:
    return json.loads(at.json[0].value)


def test_people_are_the_default_and_the_judges_present_are_offered(app, judged):
    at = open_calibrate(app)
    radio = at.radio(key="calibrate_label_source")
    assert radio.options == ["People", CE, UMBRELA, "People, else the judge"]
    assert radio.value == "People"
    assert metric(at, "Labelled hits") == "8"
    assert not agreement_notes(at)  # no judge label in these figures: nothing to qualify
    assert "label_source" not in floor_json(at)["filters"]


def test_a_judges_labels_alone_come_with_its_kappa_interval_and_pair_count(app, judged):
    at = open_calibrate(app)
    pick(at, UMBRELA)
    assert metric(at, "Labelled hits") == "5"
    assert metric(at, "Relevant") == "2"  # grade 3 twice; grade 1 reads as not relevant
    [note] = agreement_notes(at)
    assert "5 of these labels come from a judge" in note
    assert f"{UMBRELA} vs people: Cohen's kappa" in note and "95% interval" in note
    assert "over 3 pair(s)" in note
    filters = floor_json(at)["filters"]
    assert (filters["label_source"], filters["judge"], filters["judge_labels"]) == ("judge", UMBRELA, 5)
    assert filters["agreement"]["pairs"] == 3


def test_the_agreement_memlens_judge_align_recorded_shows_beside_the_live_one(app, judged):
    db = AppDatabase(judged / "labels.sqlite")
    db.judge_labels.save_record(UMBRELA, {"count": 64, "kappa": 0.8125, "variant": "strict", "measured_by": "memlens judge align",
                                      "confusion": {}})
    db.close()
    at = open_calibrate(app)
    pick(at, UMBRELA)
    assert any("Recorded by memlens judge align: held-out kappa 0.812 over 64 people's label(s), prompt variant strict" in seen(c.value)
               for c in at.caption)


def test_a_judge_whose_every_reason_is_the_placeholder_is_called_out_beside_its_figures(app, judged):
    # (A judge giving one grade to every pair never gets this far: the page says all its
    # labels are one class and there is nothing to calibrate.)
    db = AppDatabase(judged / "labels.sqlite")
    for i in range(10):
        db.judge_labels.save(message_id=f"m{i % 4}", memory_id=["on", "off"][i % 2] if i < 4 else f"n{i}", source=BROKEN,
                            grade=3 * (i % 2 == 0), reason="<one long sentence>", store_score=0.1 * i, rank=1)
    db.close()
    at = open_calibrate(app)
    pick(at, BROKEN)
    shown = [seen(w.value) for w in at.warning]
    assert any(f"Broken judge? {BROKEN}: 10 of 10 reason(s) repeat the prompt's placeholder '<one long sentence>'" in w
               for w in shown)


def test_people_else_the_judge_fills_only_pairs_no_person_labelled(app, judged):
    at = open_calibrate(app)
    pick(at, "People, else the judge")
    at.selectbox(key="calibrate_fill_judge").select(UMBRELA).run()
    assert not at.exception, at.exception
    assert metric(at, "Labelled hits") == "10"  # ana's 8 and the judge's 2 of m5
    [note] = agreement_notes(at)
    assert "2 of these labels come from a judge" in note and "over 3 pair(s)" in note
    filters = floor_json(at)["filters"]
    assert (filters["people_labels"], filters["judge_labels"]) == (8, 2)


def test_a_judge_no_person_checked_is_said_plainly(app, judged):
    at = open_calibrate(app)
    pick(at, CE)
    assert metric(at, "Labelled hits") == "2"
    [note] = agreement_notes(at)
    assert "no pair is labelled by both a person and this judge" in note
    assert "agreement with people is unknown" in note
    assert floor_json(at)["filters"]["agreement"] == {"kappa": None, "kappa_interval": None, "pairs": 0}


def test_with_judge_labels_only_the_page_points_to_the_judge_and_calibrates_on_it(app, data_dir):
    db = AppDatabase(data_dir / "labels.sqlite")
    for memory, grade, score in [("a", 3, 0.8), ("b", 0, 0.2)]:
        db.judge_labels.save(message_id="m1", memory_id=memory, source=CE, grade=grade, reason="", store_score=score)
    db.close()
    at = open_calibrate(app)
    assert not any("Demo data" in box.value for box in at.info)
    assert any("No person has labelled yet" in box.value for box in at.info)
    pick(at, CE)
    assert metric(at, "Labelled hits") == "2"
    assert any("no pair is labelled by both" in note for note in agreement_notes(at))


def test_a_judge_label_that_recorded_its_store_survives_the_store_filter(app, judged):
    db = AppDatabase(judged / "labels.sqlite")
    # m6 only the judge graded, on ana's store; m8 on a store no person labelled.
    db.judge_labels.save(message_id="m6", memory_id="q", source=UMBRELA, grade=3, reason="r", store_score=0.7,
                        rank=1, store="embedded:aaaa1111")
    for memory, grade, score in [("r", 0, 0.2), ("s", 3, 0.6)]:
        db.judge_labels.save(message_id="m8", memory_id=memory, source=UMBRELA, grade=grade, reason="r",
                            store_score=score, rank=1, store="embedded:bbbb2222")
    db.close()
    at = open_calibrate(app)
    pick(at, UMBRELA)
    # stores named for people (settings this server does not know: the kind and the id)
    assert at.selectbox(key="calibrate_store").options == ["(all)", "Embedded (embedded:aaaa1111)", "Embedded (embedded:bbbb2222)"]
    at.selectbox(key="calibrate_store").select("embedded:aaaa1111").run()
    assert not at.exception, at.exception
    # m0-m2 (store from ana's labels of them) and m6 (its own); m5 recorded no store and nobody else labelled it.
    assert metric(at, "Labelled hits") == "4"
    assert floor_json(at)["filters"]["store"] == "embedded:aaaa1111"
    at.selectbox(key="calibrate_store").select("embedded:bbbb2222").run()
    assert not at.exception, at.exception
    assert metric(at, "Labelled hits") == "2"
