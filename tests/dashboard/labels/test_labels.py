import json

import pandas as pd
import pytest

from dashboard.database import AppDatabase
from dashboard.database.model import EXPORT_FIELDS, message_id
from dashboard.labels import export


@pytest.fixture
def store(tmp_path):
    s = AppDatabase(tmp_path / "labels.sqlite")
    yield s
    s.close()


def label(store, memory_id="m1", value="relevant", reviewer="ana", **extra):
    return store.labels.save(
        message_id="msg-1",
        memory_id=memory_id,
        label=value,
        reviewer=reviewer,
        store="embedded:abcd1234",
        rank=1,
        score=0.42,
        **extra,
    )


def test_label_survives_reopening_the_file(tmp_path):
    first = AppDatabase(tmp_path / "labels.sqlite")
    label(first)
    first.close()
    again = AppDatabase(tmp_path / "labels.sqlite")
    [row] = again.labels.find()
    assert (row.message_id, row.memory_id, row.label, row.score, row.rank) == ("msg-1", "m1", "relevant", 0.42, 1)


def test_relabel_updates_one_row_and_keeps_the_old_value(store):
    first = label(store, value="relevant")
    second = label(store, value="not_relevant")
    rows = store.labels.find()
    assert len(rows) == 1 and rows[0].label == "not_relevant"
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert [(h["old_label"], h["new_label"]) for h in store.labels.history("msg-1", "m1")] == [("relevant", "not_relevant")]


def test_reviewers_label_independently(store):
    label(store, reviewer="ana", value="relevant")
    label(store, reviewer="ben", value="not_relevant")
    assert {(row.reviewer, row.label) for row in store.labels.find()} == {("ana", "relevant"), ("ben", "not_relevant")}


@pytest.mark.parametrize("bad", ["yes", "", "Relevant", None])
def test_unknown_label_value_is_refused(store, bad):
    with pytest.raises(ValueError, match="label must be one of"):
        label(store, value=bad)
    assert store.labels.find() == []


def test_text_is_not_stored_unless_opted_in(store, tmp_path):
    label(store, memory_id="m1")
    label(store, memory_id="m2", query_text="where?", memory_text="Lives in Lisbon")
    import sqlite3

    # Read the file with a separate connection: what is on disk, not what the API says.
    with sqlite3.connect(tmp_path / "labels.sqlite") as db:
        on_disk = {r[0]: r[1:] for r in db.execute("SELECT memory_id, query_text, memory_text FROM labels")}
    assert on_disk == {"m1": (None, None), "m2": ("where?", "Lives in Lisbon")}


def test_delete_is_an_undo_recorded_in_history(store):
    label(store)
    assert store.labels.delete("msg-1", "m1", "ana") is True
    assert store.labels.find() == []
    assert store.labels.history("msg-1", "m1")[-1]["new_label"] is None
    assert store.labels.delete("msg-1", "m1", "ana") is False


def test_message_id_is_stable_and_distinguishes_user_and_store():
    a = message_id("Where does the user live?", "sam", "embedded:1")
    assert a == message_id("Where  does the user live? ", "sam", "embedded:1")
    assert a != message_id("Where does the user live?", "priya", "embedded:1")
    assert a != message_id("Where does the user live?", "sam", "embedded:2")
    assert "live" not in a.lower().replace("live-", "")  # the id carries no query text


def test_jsonl_export_has_one_row_per_label_and_no_text(store):
    label(store, memory_id="m1", memory_text="Prefers light UI theme", query_text="pizza?")
    label(store, memory_id="m2", value="not_relevant")
    text = export.to_jsonl(store.labels.find())
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 2
    assert all(tuple(r) == EXPORT_FIELDS for r in rows)
    assert "Prefers light UI theme" not in text and "pizza" not in text
    assert list(pd.read_json(__import__("io").StringIO(text), lines=True)["memory_id"]) == ["m1", "m2"]


def test_export_with_text_when_opted_in(store):
    label(store, memory_id="m1", memory_text="Prefers light UI theme", query_text="pizza?")
    row = json.loads(export.to_jsonl(store.labels.find(), include_text=True))
    assert row["memory_text"] == "Prefers light UI theme" and row["query_text"] == "pizza?"


@pytest.mark.parametrize("cell", ["=1+1", "+cmd", "-2+3", "@SUM(A1)"])
def test_csv_neutralises_formula_cells(store, cell):
    store.labels.save(message_id=cell, memory_id="m1", label="relevant", reviewer="ana", store="s", score=-0.25, rank=1)
    frame = pd.read_csv(__import__("io").StringIO(export.to_csv(store.labels.find())))
    assert frame.loc[0, "message_id"] == "'" + cell
    assert frame.loc[0, "score"] == -0.25  # a negative number stays a number


def test_qrels_majority_vote(store):
    label(store, memory_id="m1", reviewer="ana", value="relevant")
    label(store, memory_id="m1", reviewer="ben", value="not_relevant")
    label(store, memory_id="m1", reviewer="cy", value="not_relevant")
    label(store, memory_id="m2", reviewer="ana", value="relevant")
    assert export.to_qrels(store.labels.find()) == "msg-1 0 m1 0\nmsg-1 0 m2 1\n"


def test_unicode_and_rtl_survive_export(store):
    label(store, memory_id="מזהה-٣", memory_text="שלום עולם 🍕")
    row = json.loads(export.to_jsonl(store.labels.find(), include_text=True))
    assert row["memory_id"] == "מזהה-٣" and row["memory_text"] == "שלום עולם 🍕"


FORGING_IDS = [
    "m1 1\nmsg-1 0 forged 1",  # a line break and columns: an invented relevant judgment
    "id with spaces",  # would shift the columns
    "tab\tand\rcarriage",
    "next\u2028line\x85and\x1ffield",  # line and field separators a splitlines() reader breaks at
]


@pytest.mark.parametrize("hostile", FORGING_IDS)
def test_every_export_keeps_one_label_one_record_whatever_the_id(store, hostile):
    store.labels.save(message_id="msg 1\n", memory_id=hostile, label="not_relevant", reviewer="ana", store="s", score=0.3, rank=1)
    qrels = export.to_qrels(store.labels.find())
    # exactly one judgment line of four columns, still not relevant
    [line] = qrels.splitlines()
    columns = line.split()
    assert len(columns) == 4 and columns[1] == "0" and columns[3] == "0"
    assert columns[0] == "msg_1_" and columns[2] == export.trec_token(hostile)
    # JSONL and CSV quote instead: one record each, the id exactly as stored
    [row] = [json.loads(text) for text in export.to_jsonl(store.labels.find()).split("\n") if text]
    assert row["memory_id"] == hostile and row["message_id"] == "msg 1\n"
    frame = pd.read_csv(__import__("io").StringIO(export.to_csv(store.labels.find())), keep_default_na=False)
    assert len(frame) == 1 and frame.loc[0, "memory_id"] == hostile
