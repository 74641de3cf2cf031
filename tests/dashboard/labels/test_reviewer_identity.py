"""One person, one reviewer (issue 52): names are compared after Unicode NFKC and case
folding everywhere they are compared or counted (dashboard.database.model
.reviewer_key), and look-alike names from other scripts are flagged where names are
listed, never merged."""

from __future__ import annotations

import json

import pytest

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.database.model import Label, reviewer_key
from dashboard.database.sessions import LabelSession, SessionItem
from dashboard.labels.counted import filter_labels
from dashboard.labels.labelling import load_queue, record
from dashboard.labels.people_files import read_people_labels
from dashboard.labels.resolution import lookalike_notes, resolve
from dashboard.labels.reviewer_agreement import agreement

COMPOSED, DECOMPOSED = "Jos\u00e9", "Jose\u0301"  # é as one code point, and e + a combining accent
CYRILLIC_SAM = "S\u0430m"  # a Cyrillic а


def _label(message: str, reviewer: str, label: str, when: str = "2026-01-01T10:00:00Z") -> Label:
    return Label(message, "mem-1", 1, 0.5, label, reviewer, "embedded:1", when, when)


def test_both_unicode_spellings_of_jose_are_one_reviewer_everywhere_names_are_counted():
    assert reviewer_key(COMPOSED) == reviewer_key(DECOMPOSED) == reviewer_key(" JOSÉ ") == reviewer_key("Ｊｏｓé")
    labels = [_label("t1", COMPOSED, "relevant"), _label("t1", DECOMPOSED, "not_relevant", "2026-01-02T10:00:00Z"),
              _label("t1", "ben", "not_relevant")]  # fmt: skip
    report = agreement(labels)
    assert len(report.reviewers) == 2 and report.method == "cohen"  # not three reviewers and Fleiss
    # one vote per person per pair: José's later label, and with ben's a majority
    [counted] = resolve(labels).labels
    assert counted.label == "not_relevant"
    assert len(filter_labels(labels, reviewer=DECOMPOSED)) == 2


def test_a_people_file_counts_both_spellings_as_one_reviewer_with_one_row_per_pair(tmp_path):
    path = tmp_path / "people.jsonl"
    path.write_text("".join(json.dumps({"message_id": "t1", "memory_id": "m1", "label": label, "reviewer": name}) + "\n"
                            for name, label in ((COMPOSED, "relevant"), (DECOMPOSED, "not_relevant"))), encoding="utf-8")  # fmt: skip
    found = read_people_labels(path)
    assert "from 1 reviewer(s)" in found.summary()
    assert [label.label for label in found.labels] == ["not_relevant"]  # the later row, as a relabel


def test_look_alike_names_from_another_script_are_flagged_when_listed_not_merged(tmp_path, capsys):
    assert reviewer_key(CYRILLIC_SAM) != reviewer_key("Sam")  # two names: maybe two people
    [note] = lookalike_notes(["Sam", CYRILLIC_SAM, "ana"])
    assert "S\\u0430m" in note and "'Sam'" in note and "look alike" in note
    assert lookalike_notes(["Sam", "sam", COMPOSED, DECOMPOSED]) == []  # one person each: nothing to flag
    path = tmp_path / "people.jsonl"
    path.write_text("".join(json.dumps({"message_id": "t1", "memory_id": "m1", "label": "relevant", "reviewer": name}) + "\n"
                            for name in ("Sam", CYRILLIC_SAM)), encoding="utf-8")  # fmt: skip
    assert main(["agreement", str(path), "--labels", str(tmp_path / "labels.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "look alike" in out and "S\\u0430m" in out
    assert "2 reviewer(s)" in out  # flagged, still two reviewers


# The app database on both backends: SQLite and a real PostgreSQL server (the suite's
# `postgres` fixture). Names are stored as typed; a look-up by reviewer finds them
# under either spelling.
@pytest.fixture(params=["sqlite", "postgres"])
def app_db(request, tmp_path):
    target = str(tmp_path / "labels.sqlite") if request.param == "sqlite" else request.getfixturevalue("postgres").new_database()
    db = AppDatabase(target)
    yield db
    db.close()


def _save(db, message: str, memory: str, reviewer: str, label: str = "relevant"):
    return db.labels.save(message_id=message, memory_id=memory, label=label, reviewer=reviewer, store="embedded:1", rank=1, score=0.5)


def test_the_app_database_finds_a_reviewers_labels_under_either_spelling(app_db):
    """What the Inspect page lists as "my labels" and what the Label page shows as a
    reviewer's previous label: José's, however the name was typed when saving."""
    _save(app_db, "t1", "m1", DECOMPOSED)
    _save(app_db, "t1", "m2", COMPOSED, "not_relevant")
    _save(app_db, "t1", "m1", "ben", "not_relevant")
    for typed in (COMPOSED, DECOMPOSED, " josé "):
        assert sorted((row.memory_id, row.label) for row in app_db.labels.find(reviewer=typed)) == [
            ("m1", "relevant"), ("m2", "not_relevant")
        ]  # fmt: skip
    assert app_db.labels.get("t1", "m1", COMPOSED).label == "relevant"  # saved as e + a combining accent
    assert [row.label for row in app_db.labels.find(reviewer="ben")] == ["not_relevant"]
    assert app_db.labels.get("t1", "m2", "ben") is None
    assert len(app_db.labels.reviewers()) == 2  # the pages' reviewer choice: José once, and ben


def test_a_label_file_lists_each_reviewer_once_as_calibrate_reports_them(tmp_path):
    from dashboard.calibration.label_files import read_label_file

    path = tmp_path / "labels.jsonl"
    path.write_text("".join(
        json.dumps({"message_id": "t1", "memory_id": memory, "label": "relevant", "score": 0.5, "reviewer": name}) + "\n"
        for memory, name in (("m1", COMPOSED), ("m2", DECOMPOSED), ("m3", "ben"))
    ), encoding="utf-8")  # fmt: skip
    assert read_label_file(path).reviewers() == ["Jos\u00e9", "ben"]


def test_a_team_session_queue_is_one_reviewers_under_either_spelling(app_db):
    """A lead assigns turns to "José" typed one way; the reviewer works, labels and
    skips under the other: one queue, their own rows done, someone else's turn not in it."""
    items = [SessionItem(i, message, memory, 1, 0.5) for i, (message, memory) in enumerate(
        [("t1", "m1"), ("t1", "m2"), ("t2", "m3"), ("t3", "m4")])]  # fmt: skip
    session = LabelSession("team", "turns", len(items), seed=1, reviewers=[DECOMPOSED, "ben"])
    app_db.sessions.create(session, items, {"t1": [DECOMPOSED], "t2": [DECOMPOSED], "t3": ["ben"]})
    _save(app_db, "t1", "m1", DECOMPOSED)
    app_db.sessions.skip("team", "t1", "m2", DECOMPOSED)
    queue = load_queue(app_db, "team", COMPOSED)
    assert queue.assigned and [(i.message_id, i.memory_id) for i in queue.items] == [("t1", "m1"), ("t1", "m2"), ("t2", "m3")]
    assert queue.labels == {("t1", "m1"): "relevant"} and queue.skipped == {("t1", "m2")}
    assert queue.done == 2
    # labelling the skipped row under the other spelling takes the skip back
    record(app_db, app_db.sessions.get("team"), items[1], COMPOSED, "relevant")
    assert app_db.sessions.skips("team") == set()
    assert load_queue(app_db, "team", DECOMPOSED).labels == {("t1", "m1"): "relevant", ("t1", "m2"): "relevant"}
