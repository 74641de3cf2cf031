"""Quality's labelled-session figures from judge labels in AppTest: the "Label source"
choice and the judge's agreement with people beside the figures."""

from __future__ import annotations

from markdown_text import seen

from dashboard.database import AppDatabase

UMBRELA = "judge:umbrela@m"


def metric_values(at, label):
    return [m.value for m in at.metric if m.label == label]


def test_quality_measures_a_judges_labels_beside_its_agreement_with_people(app, data_dir):
    db = AppDatabase(data_dir / "labels.sqlite")
    for memory_id, rank, score, label in (("off", 1, 0.20, "not_relevant"), ("good", 2, 0.60, "relevant"), ("fine", 3, 0.50, "relevant")):
        db.labels.save(message_id="msg-1", memory_id=memory_id, label=label, reviewer="ana", store="embedded:feedbeef",
                      rank=rank, score=score)
    # The judge calls the off-topic memory relevant (people disagree), agrees on "good",
    # and graded a fourth memory nobody labelled.
    for memory_id, rank, score, grade in (("off", 1, 0.20, 3), ("good", 2, 0.60, 3), ("extra", 4, 0.55, 2)):
        db.judge_labels.save(message_id="msg-1", memory_id=memory_id, source=UMBRELA, grade=grade, reason="r",
                             rank=rank, store_score=score)
    db.close()
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    assert not at.exception, at.exception
    source = at.radio(key="quality_label_source")
    assert source.options == ["People", UMBRELA, "People, else the judge"] and source.value == "People"
    assert metric_values(at, "Top-3 precision, store order") == ["0.667"]  # people's labels, as before
    assert not [box for box in at.info if "judge" in box.value]

    source.set_value(UMBRELA).run()
    assert not at.exception, at.exception
    assert metric_values(at, "Top-3 precision, store order") == ["1.000"]  # the judge calls all three relevant
    [note] = [seen(box.value) for box in at.info if "judge" in box.value]
    assert "3 of these labels come from a judge" in note
    assert f"{UMBRELA} vs people: Cohen's kappa" in note and "over 2 pair(s)" in note

    at.radio(key="quality_label_source").set_value("People, else the judge").run()
    assert not at.exception, at.exception
    assert any("4 label(s)" in c.value for c in at.caption)  # ana's three and the judge's "extra"
    [note] = [seen(box.value) for box in at.info if "judge" in box.value]
    assert "1 of these labels come from a judge" in note
