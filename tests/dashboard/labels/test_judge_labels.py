"""Judge labels sit beside people's labels in the same SQLite file, never among them."""

from __future__ import annotations

import pytest

from dashboard.database import AppDatabase
from dashboard.database.judge_labels import judge_source, source_name
from dashboard.database.model import LabelStoreError

SOURCE = judge_source("umbrela", "llama3.2")


@pytest.fixture
def store(tmp_path):
    s = AppDatabase(tmp_path / "labels.sqlite")
    yield s
    s.close()


def test_a_judge_label_keeps_its_source_grade_and_reason_and_survives_reopening(tmp_path):
    first = AppDatabase(tmp_path / "labels.sqlite")
    first.judge_labels.save(message_id="q1", memory_id="m1", source=SOURCE, grade=3, reason="names the city", rank=1, store_score=0.6)
    first.close()
    again = AppDatabase(tmp_path / "labels.sqlite")
    [row] = again.judge_labels.find()
    assert (row.source, row.grade, row.reason, row.rank, row.store_score, row.relevant) == (SOURCE, 3, "names the city", 1, 0.6, True)
    assert SOURCE == "judge:umbrela@llama3.2" and source_name(SOURCE) == "umbrela"
    again.close()


def test_a_judge_label_keeps_the_store_it_was_graded_for_and_an_older_file_gains_the_column(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)  # judge_labels as the first memlens with judges wrote it: no store column
    old.execute(
        "CREATE TABLE judge_labels (message_id TEXT NOT NULL, memory_id TEXT NOT NULL, source TEXT NOT NULL,"
        " grade INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3), reason TEXT NOT NULL, score REAL, rank INTEGER,"
        " store_score REAL, created_at TEXT NOT NULL, PRIMARY KEY (message_id, memory_id, source))"
    )
    old.execute("INSERT INTO judge_labels VALUES ('q0', 'm0', ?, 1, 'old', NULL, 1, 0.3, '2026-01-01T00:00:00')", (SOURCE,))
    old.commit()
    old.close()
    db = AppDatabase(path)
    db.judge_labels.save(message_id="q1", memory_id="m1", source=SOURCE, grade=2, reason="partly", store="embedded:ab12")
    assert [(j.message_id, j.store) for j in db.judge_labels.find()] == [("q0", None), ("q1", "embedded:ab12")]
    db.close()


def test_people_readers_never_see_judge_labels(store):
    store.labels.save(message_id="q1", memory_id="m1", label="relevant", reviewer="ana", store="embedded:1")
    store.judge_labels.save(message_id="q1", memory_id="m1", source=SOURCE, grade=0, reason="off topic")
    store.judge_labels.save(message_id="q1", memory_id="m2", source=SOURCE, grade=2, reason="partly")
    assert [(lab.memory_id, lab.reviewer) for lab in store.labels.find()] == [("m1", "ana")]
    assert store.labels.reviewers() == ["ana"]
    assert store.judge_labels.sources() == [SOURCE]
    assert len(store.judge_labels.find(source=SOURCE)) == 2 and store.judge_labels.find(source="judge:other@x") == []


def test_a_second_grade_from_the_same_judge_replaces_the_first(store):
    store.judge_labels.save(message_id="q1", memory_id="m1", source=SOURCE, grade=1, reason="related")
    store.judge_labels.save(message_id="q1", memory_id="m1", source=SOURCE, grade=3, reason="answers")
    [row] = store.judge_labels.find()
    assert (row.grade, row.reason) == (3, "answers")


@pytest.mark.parametrize(("source", "grade"), [("ana", 2), (SOURCE, 4), (SOURCE, True)])
def test_bad_judge_labels_are_refused_before_the_database(store, source, grade):
    with pytest.raises(ValueError):
        store.judge_labels.save(message_id="q1", memory_id="m1", source=source, grade=grade, reason="r")
    assert store.judge_labels.find() == []


def test_the_database_itself_refuses_a_grade_out_of_range(store):
    with pytest.raises(LabelStoreError), store.conn.transaction():
        store.conn.run("INSERT INTO judge_labels VALUES ('q', 'm', 'judge:x@y', 7, 'r', NULL, NULL, NULL, 'now')")


def test_an_export_row_keeps_the_source_and_carries_the_reason_only_on_opt_in(store):
    store.judge_labels.save(message_id="q1", memory_id="m1", source=SOURCE, grade=2, reason="Sam lives in Lisbon", score=1.5)
    [row] = store.judge_labels.find()
    plain = row.export_row()
    assert plain["source"] == SOURCE and plain["grade"] == 2 and plain["score"] == 1.5
    assert "reason" not in plain
    assert row.export_row(include_text=True)["reason"] == "Sam lives in Lisbon"
