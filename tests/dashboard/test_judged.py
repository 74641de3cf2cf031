"""The one model and parser of judged questions (dashboard/judged.py): bad lines named
and the rest used, the bundled demo queries whole, an unreadable file one issue."""

from __future__ import annotations

import json

from dashboard.judged import DEMO_QUERIES, JudgedQuestion, parse_jsonl, read_questions


def test_bad_lines_are_named_and_the_good_ones_kept():
    text = "\n".join(
        [
            '{"message_id": "q1", "user_id": "sam", "query": "Where?", "relevant": ["sam-01"], "answerable": true}',
            "{not json",
            '{"message_id": "q2", "user_id": "sam", "query": "", "relevant": [], "answerable": false}',
            '{"message_id": "q3", "user_id": "sam", "query": "Pets?", "relevant": "sam-14", "answerable": true}',
            '{"message_id": "q4", "user_id": "sam", "query": "Pizza?", "relevant": ["sam-02"], "answerable": false}',
            '{"message_id": "q1", "user_id": "sam", "query": "Again", "relevant": [], "answerable": false}',
            "",
            '{"message_id": "q5", "user_id": null, "query": "Pizza?", "relevant": [], "answerable": false, "extra": 1}',
        ]
    )
    questions, issues = parse_jsonl(text, source="q.jsonl")
    assert [q.message_id for q in questions] == ["q1", "q5"]
    assert questions[0].grades == {"sam-01": 1} and questions[0].relevant == ("sam-01",)
    assert questions[1].user_id is None and not questions[1].answerable
    assert [(i.line, i.field) for i in issues] == [
        (2, "(line)"),
        (3, "query"),
        (4, "relevant"),
        (5, "answerable"),
        (6, "message_id"),
    ]
    assert str(issues[3]).startswith("q.jsonl: line 5, field 'answerable':")
    assert "is false but 1 memory id(s) are judged relevant" in str(issues[3])


def test_answerable_and_relevant_may_be_left_out_and_are_then_read_from_the_judgments():
    # One parser for every reader: `answerable` is checked when a line states it and
    # otherwise follows from the judgments; a line with none is an unanswerable question.
    text = "\n".join(
        [
            '{"message_id": "q1", "user_id": "sam", "query": "Where?", "relevant": ["sam-01"]}',
            '{"message_id": "q2", "user_id": "sam", "query": "Pizza?"}',
            '{"message_id": "q3", "user_id": "sam", "query": "Runs?", "grades": {"sam-07": 3, "sam-09": 0, "sam-08": 1}}',
        ]
    )
    questions, issues = parse_jsonl(text)
    assert issues == []
    assert [(q.message_id, q.answerable, q.relevant) for q in questions] == [
        ("q1", True, ("sam-01",)),
        ("q2", False, ()),
        ("q3", True, ("sam-07", "sam-08")),
    ]


def test_relevant_keeps_the_file_order_and_each_id_once():
    [question], issues = parse_jsonl('{"message_id": "q", "query": "x", "relevant": ["m3", "m1", "m3", "m2"]}')
    assert issues == []
    assert question.relevant == ("m3", "m1", "m2")
    assert JudgedQuestion("q", None, "x", {"b": 2, "a": 0, "c": 1}).relevant == ("b", "c")


def test_a_query_holding_a_unicode_line_separator_stays_on_its_line():
    text = (
        json.dumps({"message_id": "q1", "user_id": "sam", "query": "Where\u2028now?", "relevant": [], "answerable": False}, ensure_ascii=False)
        + "\r\n"
        + '{"message_id": "q2", "user_id": "sam", "query": "Pets?", "relevant": ["sam-14"], "answerable": true}\n'
    )
    questions, issues = parse_jsonl(text)
    assert issues == []
    assert [q.query for q in questions] == ["Where\u2028now?", "Pets?"]


def test_the_bundled_demo_queries_are_whole_and_state_answerable_on_every_line():
    questions, issues = read_questions(DEMO_QUERIES)
    assert issues == []
    assert len(questions) >= 20
    assert any(q.answerable for q in questions) and any(not q.answerable for q in questions)
    # parse_jsonl holds a stated `answerable` to the judgments; the demo file states it
    # on every line, so each of its questions was checked that way.
    rows = [json.loads(line) for line in DEMO_QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert all(isinstance(row.get("answerable"), bool) for row in rows)
    assert all(isinstance(row.get("user_id"), str) and row["user_id"] for row in rows)


def test_an_unreadable_file_is_one_issue_naming_it(tmp_path):
    questions, issues = read_questions(tmp_path / "gone.jsonl")
    assert questions == []
    [issue] = issues
    assert (issue.file, issue.line, issue.field) == ("gone.jsonl", 0, "(file)")
    assert "cannot read" in issue.message and "gone.jsonl" in issue.message

    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"message_id": "q1", "query": "Caf\u00e9?"}\n'.encode("latin-1"))
    questions, issues = read_questions(latin)
    assert questions == [] and [(i.file, i.line, i.field) for i in issues] == [("latin.jsonl", 0, "(file)")]
    assert "not UTF-8" in issues[0].message
