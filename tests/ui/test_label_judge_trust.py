"""The Label page offers a judge's suggestions with their measured trust: its kappa,
precision and recall per label and the number of people's labels beside them, one-key
Accept only once agreement passes the bar, and a broken judge called out."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_text import seen

from dashboard.database import AppDatabase
from dashboard.display import inert_markdown
from dashboard.labels import sampling
from dashboard.logs.retrieval_log import read_log

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dashboard" / "views" / "label.py")
SAMPLE_LOG = ROOT / "demo_data" / "sample_log.jsonl"
SOURCE = "judge:umbrela@scripted"


@pytest.fixture
def session_items(data_dir, demo_store):
    """A session of three whole turns of the sample log; its rows, in order."""
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        sampling.save_session(db, "week", read_log(SAMPLE_LOG).rows, method="turns", size=3, seed=2)
        return db.sessions.items("week")
    finally:
        db.close()


def opened(data_dir):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["label_reviewer"] = "ana"
    at.session_state["label_session"] = "week"
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at) -> str:
    return " ".join([c.value for c in at.caption] + [w.value for w in at.warning])


def shows(at, text: str) -> bool:
    """`text` is on the page, as the inert renderer writes outside text."""
    return inert_markdown(text) in texts(at)


def grade_all(data_dir, items, grade_of, reason_of) -> None:
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        for n, item in enumerate(items):
            db.judge_labels.save(message_id=item.message_id, memory_id=item.memory_id, source=SOURCE,
                                grade=grade_of(n), reason=reason_of(n))
    finally:
        db.close()


def label_as_people(data_dir, items, relevant_of) -> None:
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        for n, item in enumerate(items):
            db.labels.save(message_id=item.message_id, memory_id=item.memory_id, reviewer="ben", store="s",
                         label="relevant" if relevant_of(n) else "not_relevant")
    finally:
        db.close()


def test_a_judge_giving_grade_0_and_the_placeholder_everywhere_is_flagged_and_accept_is_off(data_dir, session_items, monkeypatch):
    grade_all(data_dir, session_items, lambda n: 0, lambda n: "<one long sentence>")
    # Even with enough people's labels (ben's, all not relevant, which the judge "agrees" with).
    monkeypatch.setenv("MEMLENS_JUDGE_MIN_LABELS", "5")
    label_as_people(data_dir, session_items[5:], lambda n: False)
    at = opened(data_dir)
    n = len(session_items)
    assert shows(at, f"Broken judge? {SOURCE}: one grade for every pair: all {n} graded pair(s) got grade 0 (unrelated)")
    assert shows(at, f"{n} of {n} reason(s) repeat the prompt's placeholder '<one long sentence>'")
    assert shows(at, f"Suggestions from {SOURCE} are hints only, Accept is off: its grades are degenerate")
    assert any("grade **0** (unrelated)" in c.value for c in at.caption)  # still shown, as a hint
    assert at.button(key="label_accept_suggestion").disabled


def test_accept_stays_off_until_agreement_is_measured_on_enough_labels_and_passes_the_bar(data_dir, session_items, monkeypatch):
    monkeypatch.setenv("MEMLENS_JUDGE_MIN_LABELS", "6")
    monkeypatch.setenv("MEMLENS_JUDGE_MIN_KAPPA", "0.7")
    grade_all(data_dir, session_items, lambda n: 3 if n % 3 == 0 else 0, lambda n: f"reason number {n}")
    # No person has labelled: the suggestion is a hint, and the page says why.
    at = opened(data_dir)
    assert shows(at, f"{SOURCE}: no people's label to measure it against yet")
    assert shows(at, "agreement is measured on 0 people's label(s), fewer than the 6 required")
    assert at.button(key="label_accept_suggestion").disabled

    # Another reviewer labels every row, agreeing with the judge on all but the first.
    label_as_people(data_dir, session_items, lambda n: (n % 3 == 0) != (n == 0))
    at = opened(data_dir)
    assert shows(at, f"on {len(session_items)} people's label(s) (the label database)")
    assert shows(at, "; relevant precision") and shows(at, "; not_relevant precision")
    assert at.button(key="label_accept_suggestion").disabled is False
    # Each suggestion on the turn is marked aligned with people's label, or not.
    marks = [seen(c.value) for c in at.caption if c.value.startswith("Suggested by")]
    assert "✗ not aligned: people said not relevant" in marks[0]
    assert all("✓ aligned with people" in mark for mark in marks[1:]) and len(marks) > 1

    # A stricter bar than this judge's kappa: hints only again.
    monkeypatch.setenv("MEMLENS_JUDGE_MIN_KAPPA", "0.99")
    at = opened(data_dir)
    assert shows(at, "under the bar 0.99")
    assert at.button(key="label_accept_suggestion").disabled


def test_the_agreement_memlens_judge_align_recorded_is_shown_and_counts_for_accept(data_dir, session_items):
    from dashboard.judging.judge_agreement import compare, to_record

    grade_all(data_dir, session_items, lambda n: 3 if n % 3 == 0 else 0, lambda n: f"reason number {n}")
    people = [n % 4 == 0 for n in range(60)]
    judge = [p if n else not p for n, p in enumerate(people)]  # held out: 60 labels, one disagreement
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        db.judge_labels.save_record(SOURCE, to_record(compare(SOURCE, people, judge, resamples=0), variant="strict"))
    finally:
        db.close()
    at = opened(data_dir)  # default bar: 50 labels, kappa 0.6; no person labelled in the database
    assert shows(at, "on 60 people's label(s) (memlens judge align, held-out labels)")
    assert at.button(key="label_accept_suggestion").disabled is False


def test_a_label_file_uploaded_on_the_label_page_becomes_a_session(data_dir, demo_store):
    from streamlit.testing.v1 import AppTest

    qrels = b"q1 0 sam-01 1\nq1 0 sam-02 0\nq2 0 sam-03 1\nq2 0 sam-04 nope\n"
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["label_reviewer"] = "ana"
    at.run()
    at.file_uploader(key="label_import_file").set_value(("people.qrels", qrels, "text/plain")).run()
    at.text_input(key="label_import_session").input("trec")
    at.button(key="label_import_run").click().run()
    assert not at.exception, at.exception
    assert any(inert_markdown("session trec: 3 rows, 3 label(s) imported") in s.value for s in at.success)
    assert shows(at, "people.qrels: line 4, field 'grade': 'nope' is not a whole number")
    assert at.selectbox(key="label_session").value == "trec"
    db = AppDatabase(data_dir / "labels.sqlite")
    try:
        saved = {(lab.message_id, lab.memory_id, lab.label, lab.reviewer) for lab in db.sessions.labels("trec")}
    finally:
        db.close()
    assert saved == {("q1", "sam-01", "relevant", "imported"), ("q1", "sam-02", "not_relevant", "imported"),
                     ("q2", "sam-03", "relevant", "imported")}
