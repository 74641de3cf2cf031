"""Judged sets: the three ways in, bad lines named, and versions kept in both label
databases (SQLite file and a real PostgreSQL server)."""

from __future__ import annotations

import json

import pytest

from dashboard.database import AppDatabase
from dashboard.database.model import utc_now
from dashboard.database.runs import QueryOutcome, RunHit, RunInfo, new_run_id
from dashboard.evaluation import judged_sets
from dashboard.evaluation.judged_sets import JudgedSet, JudgedSetError
from dashboard.judged import JudgedQuestion


def line(**fields) -> str:
    return json.dumps(fields)


def test_jsonl_reads_grades_and_tags_and_names_every_bad_line():
    text = "\n".join(
        [
            line(message_id="q1", user_id="u1", query="Where?", relevant=["m1"], answerable=True, tags=["place"]),
            line(message_id="q2", user_id="u1", query="Graded", grades={"m2": 3, "m3": 1, "m4": 0}, tags="multi"),
            "{not json",
            line(message_id="q3", user_id="u1", query="", relevant=[], answerable=False),
            line(message_id="q4", user_id="u1", query="Bad grade", grades={"m1": 7}),
            line(message_id="q5", user_id="u1", query="Says answerable", relevant=[], answerable=True),
            line(message_id="q1", user_id="u1", query="Twice", relevant=[], answerable=False),
            line(message_id="q6", user_id=None, query="Nothing stored", relevant=[], answerable=False),
        ]
    )
    questions, issues = judged_sets.parse_jsonl(text, source="mine.jsonl")
    assert [q.message_id for q in questions] == ["q1", "q2", "q6"]
    assert questions[1].grades == {"m2": 3, "m3": 1, "m4": 0} and questions[1].tags == ("multi",)
    assert questions[0].tags == ("place",) and not questions[2].answerable
    assert [(i.line, i.field) for i in issues] == [
        (3, "(line)"),
        (4, "query"),
        (5, "grades"),
        (6, "answerable"),
        (7, "message_id"),
    ]
    assert str(issues[0]).startswith("mine.jsonl: line 3, field '(line)'")


def test_trec_qrels_and_topics(tmp_path):
    qrels = tmp_path / "qrels.txt"
    topics = tmp_path / "topics.tsv"
    qrels.write_text("t1 0 m1 1\nt1 0 m2 2\nt2 0 m9 0\nt9 0 m1 1\nt1 0 m3 high\nbroken line\n")
    topics.write_text("t1\tWhere does she live?\tana\nt2\tFavourite pizza?\nt3 no tab here\n")
    judged = judged_sets.read_file(qrels, topics=topics)
    by_id = judged.by_id()
    assert by_id["t1"].grades == {"m1": 1, "m2": 2} and by_id["t1"].user_id == "ana"
    assert not by_id["t2"].answerable and by_id["t2"].user_id is None
    assert sorted((i.file, i.line, i.field) for i in judged.issues) == [
        ("qrels.txt", 4, "qid"),
        ("qrels.txt", 5, "grade"),
        ("qrels.txt", 6, "(line)"),
        ("topics.tsv", 3, "(line)"),
    ]


def test_promoted_labels_take_the_majority_and_need_the_query_text():
    from dashboard.database.model import Label

    def label(message, memory, value, reviewer):
        return Label(message, memory, 1, 0.5, value, reviewer, "embedded:x", "t", "t")

    labels = [
        label("turn-1", "m1", "relevant", "ana"),
        label("turn-1", "m1", "not_relevant", "bo"),  # a tie: unresolved, left out
        label("turn-1", "m2", "not_relevant", "ana"),
        label("turn-2", "m5", "relevant", "ana"),
    ]
    questions, issues = judged_sets.from_labels(labels, {"turn-1": ("What city?", "sam")})
    assert [(q.message_id, q.grades, q.user_id) for q in questions] == [("turn-1", {"m2": 0}, "sam")]
    assert [(i.field, "turn-2" in i.message) for i in issues] == [("query_text", True)]


def test_a_file_with_no_usable_question_is_an_error_naming_the_lines(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("[]\n")
    with pytest.raises(JudgedSetError, match="bad.jsonl: line 1"):
        judged_sets.read_file(path)


def test_the_hash_follows_the_judgments_not_the_order():
    a = JudgedQuestion("q1", "u", "one", {"m1": 1})
    b = JudgedQuestion("q2", "u", "two", {})
    assert JudgedSet("s", [a, b]).content_hash == JudgedSet("s", [b, a]).content_hash
    regraded = JudgedQuestion("q1", "u", "one", {"m1": 2})
    assert JudgedSet("s", [regraded, b]).content_hash != JudgedSet("s", [a, b]).content_hash


@pytest.fixture(params=["sqlite", "postgres"])
def evals(request, tmp_path):
    target = str(tmp_path / "labels.sqlite") if request.param == "sqlite" else request.getfixturevalue("postgres").new_database()
    db = AppDatabase(target)
    yield db
    db.close()


def test_the_newest_version_wins_even_when_saved_in_the_same_millisecond(evals, monkeypatch):
    # Two imports within one clock tick (a script, a fast machine) used to tie on
    # created_at, and "newest" was whichever row the database returned first.
    monkeypatch.setattr("dashboard.database.judged_sets.utc_now", lambda: "2026-11-30T12:00:00.000+00:00")
    versions = [JudgedSet("tick", [JudgedQuestion("q1", "u", "one", {"m1": grade})]) for grade in (1, 2, 3)]
    hashes = [evals.judged_sets.save(v) for v in versions]
    assert evals.judged_sets.load("tick").content_hash == hashes[-1]
    assert [s["content_hash"] for s in evals.judged_sets.all() if s["name"] == "tick"] == hashes[::-1]


def test_versions_and_runs_round_trip_on_both_backends(evals):
    first = JudgedSet("team", [JudgedQuestion("q1", "u", "one", {"m1": 1}, ("a",)), JudgedQuestion("q2", None, "two", {})])
    second = JudgedSet("team", [JudgedQuestion("q1", "u", "one", {"m1": 2})])
    old, new = evals.judged_sets.save(first), evals.judged_sets.save(second)
    assert evals.judged_sets.save(first) == old  # the same version is not kept twice
    assert len(evals.judged_sets.all()) == 2
    assert evals.judged_sets.load("team", old).questions == first.questions
    assert evals.judged_sets.load("team").content_hash == new  # newest by default
    run_id = new_run_id()
    evals.runs.start(
        RunInfo(run_id, "r", "team", old, "embedded", "embedded:abcd", {"db_path": "/x"}, 5, utc_now(), None, 2)
    )
    hit = RunHit("m1", 1, 0.5, 0.5, {"semantic": 0.7, "recency": 0.1}, {"semantic": 0.6, "recency": 0.4})
    evals.runs.save_outcomes(run_id, [QueryOutcome("q1", 0, "u", [hit], 12.5)])
    assert evals.runs.get(run_id).status == "incomplete (1 of 2)"
    evals.runs.save_outcomes(run_id, [QueryOutcome("q2", 1, None, [], None, "StoreTimeout: slow")])
    evals.runs.finish(run_id, ["a note"])
    done = evals.runs.get(run_id)
    # every question asked, one failed: not complete, and the status says so
    assert done.finished and not done.complete and done.failed == 1
    assert done.status == "incomplete (1 of 2; 1 failed)"
    assert done.notes == ["a note"] and done.settings == {"db_path": "/x"}
    outcomes = evals.runs.outcomes(run_id)
    assert outcomes[0].hits == [hit] and outcomes[1].error == "StoreTimeout: slow"
    assert outcomes[0].query_text is None  # no text unless the reviewer opted in
