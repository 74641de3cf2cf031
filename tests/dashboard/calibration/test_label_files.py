"""Label files for calibration: the export formats round-trip, and bad lines are
reported by line number while the good rows are still used."""

from __future__ import annotations

import json

import pytest

from dashboard.calibration.label_files import LabelFileError, from_labels, parse_label_bytes, parse_label_text, read_label_file
from dashboard.calibration.sweep import CalibrationError
from dashboard.database import AppDatabase
from dashboard.labels import export


@pytest.fixture
def store(tmp_path):
    db = AppDatabase(tmp_path / "labels.sqlite")
    db.labels.save(message_id="m1", memory_id="sam-01", label="relevant", reviewer="ana", store="embedded:1", rank=1, score=0.61)
    db.labels.save(message_id="m1", memory_id="=cmd", label="not_relevant", reviewer="ana", store="embedded:1", rank=2, score=-0.05)
    db.labels.save(message_id="m2", memory_id="sam-02", label="not_relevant", reviewer="ana", store="embedded:1", rank=1, score=0.12)
    yield db
    db.close()


@pytest.mark.parametrize("fmt, write", [("jsonl", export.to_jsonl), ("csv", export.to_csv)])
def test_export_formats_round_trip(store, tmp_path, fmt, write):
    path = tmp_path / f"labels.{fmt}"
    path.write_text(write(store.labels.find()))
    labels = read_label_file(path)
    assert labels.format == fmt and labels.issues == []
    got = {(r.message_id, r.memory_id): (r.score, r.label, r.rank, r.reviewer, r.store) for r in labels.rows}
    assert got == {
        ("m1", "sam-01"): (0.61, "relevant", 1, "ana", "embedded:1"),
        # The CSV export quotes a formula-looking id ('=cmd); reading undoes it.
        ("m1", "=cmd"): (-0.05, "not_relevant", 2, "ana", "embedded:1"),
        ("m2", "sam-02"): (0.12, "not_relevant", 1, "ana", "embedded:1"),
    }
    data = labels.labelled_scores()
    assert data.turns == 2 and data.relevant_count == 1
    dates = labels.date_range()
    assert dates is not None
    first, last = dates
    assert first <= last and labels.stores() == ["embedded:1"] and labels.reviewers() == ["ana"]


def test_plain_score_and_label_files_work_in_both_formats():
    jsonl = parse_label_text('{"score": 0.7, "label": "relevant"}\n{"score": 0.2, "label": "not_relevant"}\n')
    csv = parse_label_text("score,label\n0.7,relevant\n0.2,not_relevant\n")
    for labels in (jsonl, csv):
        assert labels.issues == [] and len(labels.rows) == 2
        assert not labels.has_message_ids
        data = labels.labelled_scores()
        assert data.turn is None and data.scores.tolist() == [0.7, 0.2]


def test_format_is_guessed_from_content_when_the_name_does_not_say():
    assert parse_label_text('{"score": 1, "label": "relevant"}', source="labels.txt").format == "jsonl"
    assert parse_label_text("score,label\n1,relevant\n", source="labels.txt").format == "csv"


JSONL_WITH_PROBLEMS = "\n".join(
    [
        '{"message_id": "m1", "memory_id": "a", "score": 0.8, "label": "relevant"}',  # 1 ok
        '{"message_id": "m1", "memory_id": "b", "score": 0.3, "label": "not_relevant"}',  # 2 ok
        '{"message_id": "m1", "memory_id": "c", "score": 0.5, "label": "relevant"',  # 3 broken JSON
        '["m1", "d", 0.4, "relevant"]',  # 4 not an object
        '{"message_id": "m2", "memory_id": "a", "score": "0.6", "label": "relevant"}',  # 5 score is text
        '{"message_id": "m2", "memory_id": "b", "score": true, "label": "relevant"}',  # 6 score is a bool
        '{"message_id": "m2", "memory_id": "c", "score": 0.2, "label": "yes"}',  # 7 unknown label
        '{"message_id": "m2", "memory_id": "d", "score": 0.2}',  # 8 no label
        "",  # 9 blank: ignored
        '{"message_id": "m1", "memory_id": "a", "score": 0.1, "label": "not_relevant"}',  # 10 duplicate of 1
        '{"message_id": ["m3"], "memory_id": "a", "score": 0.1, "label": "not_relevant"}',  # 11 id not text
        '{"message_id": "m3", "memory_id": "b", "score": 0.4, "label": "not_relevant", "rank": "first"}',  # 12 bad rank
        '{"message_id": "m3", "memory_id": "c", "score": 0.9, "label": "relevant", "created_at": "yesterday"}',  # 13
        '{"message_id": "m3", "memory_id": "d", "score": NaN, "label": "relevant"}',  # 14 NaN
    ]
)


def test_jsonl_problems_are_reported_by_line_and_good_rows_used():
    labels = parse_label_bytes(JSONL_WITH_PROBLEMS.encode(), source="team.jsonl")
    by_line = {(issue.line, issue.field): issue for issue in labels.issues}
    assert set(by_line) == {
        (3, "(line)"),
        (4, "(line)"),
        (5, "score"),
        (6, "score"),
        (7, "label"),
        (8, "label"),
        (10, "message_id, memory_id"),
        (11, "message_id"),
        (12, "rank"),
        (13, "created_at"),
        (14, "score"),
    }
    assert "not valid JSON" in by_line[3, "(line)"].message
    assert "must be a number, got str '0.6'" in by_line[5, "score"].message
    assert "unknown label 'yes'" in by_line[7, "label"].message
    assert "duplicate of line 1" in by_line[10, "message_id, memory_id"].message
    assert "not a finite number" in by_line[14, "score"].message
    # A bad optional field costs that field only.
    assert not by_line[12, "rank"].skipped and not by_line[13, "created_at"].skipped
    assert [row.line for row in labels.rows] == [1, 2, 12, 13]
    assert labels.rows[2].rank is None and labels.rows[3].created_at is None
    assert labels.skipped == 9
    report = labels.issue_report()
    assert "team.jsonl: line 7, field 'label': unknown label 'yes'" in report
    data = labels.labelled_scores()
    assert len(data) == 4 and data.turns == 2


def test_csv_problems_are_reported_by_line():
    text = (
        "message_id,memory_id,rank,score,label\n"
        "m1,a,1,0.8,relevant\n"  # 2
        "m1,b,2,high,not_relevant\n"  # 3 score not a number
        "m1,c,3,,relevant\n"  # 4 score missing
        "m1,d,4,0.2,not_relevant,extra\n"  # 5 too many cells
        "m1,a,1,0.7,relevant\n"  # 6 duplicate of 2
        "m2,a,0,0.1,not_relevant\n"  # 7 rank 0: field ignored
        "m2,b,1,inf,relevant\n"  # 8 not finite
    )
    labels = parse_label_text(text, source="team.csv")
    assert [(i.line, i.field) for i in labels.issues] == [
        (3, "score"),
        (4, "score"),
        (5, "(line)"),
        (6, "message_id, memory_id"),
        (7, "rank"),
        (8, "score"),
    ]
    assert "not a number: 'high'" in labels.issues[0].message
    assert labels.issues[1].message == "missing"
    assert "6 cells but the header names 5" in labels.issues[2].message
    assert [row.line for row in labels.rows] == [2, 7]


def test_a_csv_without_score_and_label_columns_is_refused_with_what_it_has():
    with pytest.raises(LabelFileError) as error:
        parse_label_text("id,relevance\nm1,1\n", source="qrels.csv")
    assert "qrels.csv" in str(error.value) and "'score'" in str(error.value) and "'id', 'relevance'" in str(error.value)


def test_not_utf8_is_refused():
    with pytest.raises(LabelFileError, match="not UTF-8"):
        parse_label_bytes(b"score,label\n0.5,\xff\xfe\n", source="x.csv")


def test_a_json_array_is_refused_with_the_fix():
    with pytest.raises(LabelFileError, match="one JSON object per line"):
        parse_label_text(json.dumps([{"score": 0.5, "label": "relevant"}]), source="x.json")


def test_a_file_of_only_bad_lines_reports_them_and_then_has_nothing_to_calibrate():
    labels = parse_label_text('{"score": "x", "label": "relevant"}\n{"score": 0.1, "label": "maybe"}\n')
    assert [issue.line for issue in labels.issues] == [1, 2]
    with pytest.raises(CalibrationError, match="No labelled rows"):
        labels.labelled_scores()


def test_message_ids_are_used_only_when_every_row_has_one():
    labels = parse_label_text(
        '{"message_id": "m1", "score": 0.9, "label": "relevant"}\n{"score": 0.1, "label": "not_relevant"}\n'
    )
    assert labels.issues == [] and not labels.has_message_ids
    assert labels.labelled_scores().turn is None


def test_label_store_rows_collapse_several_reviewers_by_majority_and_leave_a_tie_out(store):
    store.labels.save(message_id="m1", memory_id="sam-01", label="not_relevant", reviewer="ben", store="embedded:1", rank=1, score=0.61)
    labels = from_labels(store.labels.find())
    # ana relevant, ben not relevant: a tie, unresolved, so the pair is not counted
    assert len(labels.rows) == 2 and "sam-01" not in {r.memory_id for r in labels.rows}
    assert "more than one reviewer" in labels.notes[0] and "1 pair(s) tied" in labels.notes[1]
    # a third reviewer breaks the tie; the latest click no longer decides
    store.labels.save(message_id="m1", memory_id="sam-01", label="relevant", reviewer="cy", store="embedded:1", rank=1, score=0.61)
    pair = next(r for r in from_labels(store.labels.find()).rows if r.memory_id == "sam-01")
    assert (pair.label, pair.reviewer) == ("relevant", "ana")


def test_line_numbers_hold_with_crlf_and_raw_unicode_line_separators_in_ids():
    # JSON may carry U+2028 raw inside a string; it does not end a JSONL line.
    text = (
        '{"message_id": "m1", "memory_id": "a\u2028b", "score": 0.8, "label": "relevant"}\r\n'
        '{"message_id": "m1", "memory_id": "c", "score": 0.2, "label": "maybe"}\r\n'
        '{"message_id": "m1", "memory_id": "d", "score": 0.1, "label": "not_relevant"}\r\n'
    )
    labels = parse_label_text(text, source="x.jsonl")
    assert [(i.line, i.field) for i in labels.issues] == [(2, "label")]
    assert [(r.line, r.memory_id) for r in labels.rows] == [(1, "a\u2028b"), (3, "d")]


def two_reviewer_session(db: AppDatabase) -> None:
    """ana labels three pairs (the fixture); ben then labels one of them the other way
    (a tie: left out) and another the same way (counted once)."""
    db.labels.save(message_id="m1", memory_id="sam-01", label="relevant", reviewer="ben", store="embedded:1", rank=1, score=0.61)
    db.labels.save(message_id="m1", memory_id="sam-01", label="not_relevant", reviewer="ben", store="embedded:1", rank=1, score=0.61)
    db.labels.save(message_id="m2", memory_id="sam-02", label="not_relevant", reviewer="ben", store="embedded:1", rank=1, score=0.12)


@pytest.mark.parametrize("fmt, write", [("jsonl", export.to_jsonl), ("csv", export.to_csv)])
def test_an_export_of_a_two_reviewer_session_reads_like_the_label_store(store, tmp_path, fmt, write):
    two_reviewer_session(store)
    path = tmp_path / f"labels.{fmt}"
    path.write_text(write(store.labels.find()))
    from_file, from_store = read_label_file(path), from_labels(store.labels.find())
    # Overlap pairs are not duplicates: nothing is reported, and each pair counts once.
    assert from_file.issues == [] and from_file.skipped == 0
    chosen = {(r.message_id, r.memory_id): (r.label, r.reviewer) for r in from_file.rows}
    assert chosen == {(r.message_id, r.memory_id): (r.label, r.reviewer) for r in from_store.rows}
    assert ("m1", "sam-01") not in chosen  # ana relevant, ben (relabelled) not relevant: a tie
    assert len(from_file.rows) == 2
    assert from_file.notes == from_store.notes and "2 memory/message pair(s)" in from_file.notes[0]
    assert sorted(r.score for r in from_file.rows) == sorted(r.score for r in from_store.rows)


def test_the_majority_wins_across_reviewers_whatever_the_times():
    lines = [
        {"message_id": "m1", "memory_id": "a", "score": 0.5, "label": "relevant", "reviewer": "ben", "updated_at": "2026-03-02T10:00:00+00:00"},
        {"message_id": "m1", "memory_id": "a", "score": 0.5, "label": "not_relevant", "reviewer": "ana", "updated_at": "2026-03-01T10:00:00+00:00"},
        # Offsets are compared as times: 12:00+03:00 is 09:00 UTC, earlier than ben's.
        {"message_id": "m1", "memory_id": "a", "score": 0.5, "label": "not_relevant", "reviewer": "cy", "updated_at": "2026-03-02T12:00:00+03:00"},
    ]
    labels = parse_label_text("".join(json.dumps(line) + "\n" for line in lines), source="x.jsonl")
    assert labels.issues == []
    [row] = labels.rows
    # ben wrote last, but two of three say not relevant: the first of those stands for the pair
    assert (row.reviewer, row.label, row.line) == ("ana", "not_relevant", 2)


def test_a_true_duplicate_of_one_reviewer_is_still_reported_with_its_line():
    lines = [
        {"message_id": "m1", "memory_id": "a", "score": 0.5, "label": "relevant", "reviewer": "ana"},
        {"message_id": "m1", "memory_id": "a", "score": 0.5, "label": "not_relevant", "reviewer": "ben"},
        {"message_id": "m1", "memory_id": "a", "score": 0.5, "label": "not_relevant", "reviewer": "ana"},
    ]
    labels = parse_label_text("".join(json.dumps(line) + "\n" for line in lines), source="x.jsonl")
    [issue] = labels.issues
    assert issue.line == 3 and issue.skipped
    assert issue.message.startswith("duplicate of line 1") and "reviewer 'ana'" in issue.message
    # what is left is ana's first row against ben's: a tie, left out and said so
    assert labels.rows == [] and "more than one reviewer" in labels.notes[0] and "tied" in labels.notes[1]
