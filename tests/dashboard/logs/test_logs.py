"""Log import: every bad row named by file, line and field; the good rows imported;
repeats merged and counted. JSONL, CSV and Parquet."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dashboard.logs.retrieval_log import LogFormatError, read_log, read_log_bytes


def jsonl(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


def row(message="m1", memory="a", rank=1, score=0.5, **extra):
    return {"message_id": message, "memory_id": memory, "rank": rank, "score": score, **extra}


def found(result):
    return [(issue.line, issue.field) for issue in result.issues]


def test_a_deliberately_broken_jsonl_log_names_every_bad_row(tmp_path):
    path = tmp_path / "week.jsonl"
    path.write_bytes(
        jsonl(
            row("m1", "a", 1, 0.61, query="Where does the user live?", user_id="sam", timestamp="2026-01-05T09:00:00Z"),
            row("m1", "b", "two", 0.4),  # 2 rank text
            "{not json",  # 3
            row("m1", "c", 0, 0.3),  # 4 rank 0
            '{"message_id": "m1", "memory_id": "d", "rank": 4, "score": NaN}',  # 5 NaN
            row("", "e", 1, 0.2),  # 6 empty id
            {"memory_id": "f", "rank": 1, "score": 0.2},  # 7 no message id
            row("m2", "g", 1.5, 0.2, timestamp="last tuesday"),  # 8 two bad fields
            "[1, 2]",  # 9 not an object
            "",  # 10 blank: not a row
            row("m2", "h", 2, "0.9"),  # 11 score as text
            row("m2", "i", 3, 0.1, user_id=7),  # 12 user id a number
            row("m2", "j", 4, None),  # 13 no score: a memory returned with no score, imported
            row("m3", "k", 1, 0.33, timestamp="2026-01-05T10:00:00+02:00"),
        )
    )
    result = read_log(path)
    assert found(result) == [
        (2, "rank"), (3, "(line)"), (4, "rank"), (5, "score"), (6, "message_id"), (7, "message_id"),
        (8, "rank"), (8, "timestamp"), (9, "(line)"), (11, "score"), (12, "user_id"),
    ]
    assert all(str(issue).startswith(f"{path}: line {issue.line}, field ") for issue in result.issues)
    messages = {(i.line, i.field): i.message for i in result.issues}
    assert messages[(5, "score")] == "not a finite number"
    assert "not valid JSON" in messages[(3, "(line)")] and "two" in messages[(2, "rank")]
    assert list(zip(result.rows["memory_id"], result.rows["line"], strict=True)) == [("a", 1), ("j", 13), ("k", 14)]
    assert np.isnan(result.rows.iloc[1]["score"])
    assert result.rows_read == 13 and result.bad_rows == 10
    first = result.rows.iloc[0]
    assert first["query"] == "Where does the user live?" and first["user_id"] == "sam"
    assert result.rows.iloc[2]["timestamp"] == pd.Timestamp("2026-01-05T08:00:00Z")


def test_a_broken_csv_log_names_every_bad_row_by_line():
    data = (
        b"message_id,memory_id,rank,score,query\n"
        b'm1,a,1,0.5,"hello, world"\n'
        b"m1,b,x,0.4,q\n"
        b"\n"
        b"m2,c,2,abc,q\n"
        b"m2,d,3,0.1,q,extra\n"
        b",e,1,0.2,\n"
        b"m3,f,-1,0.3,q\n"
        b"m3,g,2,0.25,\n"
    )
    result = read_log_bytes(data, "week.csv")
    assert found(result) == [(3, "rank"), (5, "score"), (6, "(line)"), (7, "message_id"), (8, "rank")]
    assert list(zip(result.rows["memory_id"], result.rows["line"], strict=True)) == [("a", 2), ("g", 9)]
    assert result.rows.iloc[0]["query"] == "hello, world" and pd.isna(result.rows.iloc[1]["query"])
    assert result.rows["rank"].tolist() == [1, 2] and result.rows["score"].tolist() == [0.5, 0.25]


def test_parquet_rows_are_numbered_and_typed_columns_are_accepted(tmp_path):
    table = pa.table(
        {
            "message_id": pa.array([101, 101, 102]),  # integer ids: a schema choice, not an error
            "memory_id": ["a", "b", None],
            "rank": [1, 2, 1],
            "score": pa.array([0.5, None, 0.2]),  # b: returned with no score, imported
            "timestamp": pa.array([pd.Timestamp("2026-01-05 09:00")] * 3),
        }
    )
    path = tmp_path / "week.parquet"
    pq.write_table(table, path)
    result = read_log(path)
    assert found(result) == [(3, "memory_id")]
    assert result.rows["message_id"].tolist() == ["101", "101"] and np.isnan(result.rows.iloc[1]["score"])
    assert result.rows.iloc[0]["timestamp"] == pd.Timestamp("2026-01-05T09:00:00Z")


def test_repeated_rows_are_merged_counted_and_conflicts_reported():
    result = read_log_bytes(
        jsonl(row("m1", "a", 1, 0.5), row("m1", "b", 2, 0.4), row("m1", "a", 1, 0.5), row("m1", "b", 3, 0.4), row("m1", "a", 1, 0.5)),
        "dupes.jsonl",
    )
    assert len(result.rows) == 2 and result.duplicates == 3 and result.issues == []
    assert [(c.line, c.field) for c in result.conflicts] == [(4, "rank")]
    assert "repeats line 2" in result.conflicts[0].message
    assert result.rows.set_index("memory_id")["rank"].to_dict() == {"a": 1, "b": 2}  # the first is kept
    assert "3 duplicate row(s) merged (1 with a different rank or score" in result.summary()


@pytest.mark.parametrize(
    "name, data, expected",
    [
        ("log.csv", b"message_id,memory_id,score\nm,a,0.1\n", r"missing column\(s\) rank;"),
        ("log.jsonl", b"", None),
        ("log.txt", b"whatever", "cannot tell the log format"),
    ],
)
def test_whole_file_problems(name, data, expected):
    if expected is None:
        result = read_log_bytes(data, name)
        assert len(result.rows) == 0 and result.issues == []
        return
    with pytest.raises(LogFormatError, match=expected) as caught:
        read_log_bytes(data, name)
    assert name in str(caught.value)


def test_parquet_without_a_required_column_names_what_is_expected(tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"message_id": ["m"], "memory_id": ["a"], "rank": [1]}), path)
    with pytest.raises(LogFormatError, match="missing column.*score.*a log needs message_id, memory_id, rank, score"):
        read_log(path)


CORRUPTIONS = {
    "json": lambda r: "{broken",
    "rank_text": lambda r: json.dumps({**r, "rank": "first"}),
    "rank_zero": lambda r: json.dumps({**r, "rank": 0}),
    "score_text": lambda r: json.dumps({**r, "score": "0.5"}),  # (a missing score is a memory with no score: imported)
    "score_nan": lambda r: json.dumps({**r, "score": float("nan")}),
    "memory_empty": lambda r: json.dumps({**r, "memory_id": " "}),
    "timestamp": lambda r: json.dumps({**r, "timestamp": "soon"}),
    "not_object": lambda r: "42",
    "rank_fraction": lambda r: json.dumps({**r, "rank": 2.5}),
    "id_number": lambda r: json.dumps({**r, "message_id": 12345}),
    "score_bool": lambda r: json.dumps({**r, "score": True}),
}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("strategy", ["arrow names the row", "halving"])
def test_random_corruption_is_found_exactly(seed, strategy, monkeypatch):
    """Every corrupted line is reported and no other; every other row is imported,
    whether arrow's error names the failing row or the reader has to halve blocks."""
    if strategy == "halving":
        import re

        from dashboard.logs import log_files

        monkeypatch.setattr(log_files, "_ROW_IN_ERROR", re.compile(r"(?!)(\d)"))  # never matches
    rng = random.Random(seed)
    lines, bad_lines, good = [], set(), set()
    for number in range(1, 20_001):
        r = row(f"msg-{number // 5}", f"mem-{number}", number % 5 + 1, round(rng.random(), 4))
        if rng.random() < 0.002:
            lines.append("")  # a blank line is not a row, and shifts nothing
        if rng.random() < 0.01:
            lines.append(CORRUPTIONS[rng.choice(sorted(CORRUPTIONS))](r))
            bad_lines.add(len(lines))
        else:
            lines.append(json.dumps(r))
            good.add(r["memory_id"])
    result = read_log_bytes(("\n".join(lines) + "\n").encode(), "random.jsonl")
    assert {issue.line for issue in result.issues} == bad_lines
    assert set(result.rows["memory_id"]) == good
    assert result.rows_read == 20_000


def test_bad_lines_are_found_in_a_large_log():
    """100,000 rows with a bad line at the very start, the middle and the end."""
    count = 100_000
    ids = np.arange(count)
    body = [f'{{"message_id": "m{i // 5}", "memory_id": "k{i}", "rank": {i % 5 + 1}, "score": 0.5}}' for i in ids]
    for number in (1, 50_000, count):
        body[number - 1] = '{"message_id": "m", "memory_id": "x", "rank": 1, "score": "high"}'
    result = read_log_bytes(("\n".join(body)).encode(), "big.jsonl")  # no final newline
    assert [(i.line, i.field) for i in result.issues] == [(1, "score"), (50_000, "score"), (count, "score")]
    assert len(result.rows) == count - 3
    assert result.rows["line"].is_monotonic_increasing


# ------------------------------------------------------------------ hostile shapes


def nested(depth: int, leaf: object = 1) -> str:
    """A JSON value `depth` arrays deep, built as text (json.dumps would recurse)."""
    return "[" * depth + json.dumps(leaf) + "]" * depth


def test_a_line_nested_past_the_bound_in_an_extra_field_is_a_named_bad_line():
    deep = '{"message_id": "m1", "memory_id": "b", "rank": 2, "score": 0.4, "extra": ' + nested(50_001) + "}"
    just_over = '{"message_id": "m1", "memory_id": "c", "rank": 3, "score": 0.3, "extra": ' + nested(64) + "}"
    within = '{"message_id": "m1", "memory_id": "d", "rank": 4, "score": 0.2, "extra": ' + nested(63) + "}"
    result = read_log_bytes(jsonl(row(), deep, just_over, within), "deep.jsonl")
    assert result.rows["memory_id"].tolist() == ["a", "d"]
    assert [str(issue) for issue in result.issues] == [
        "deep.jsonl: line 2, field '(line)': nested more than 64 levels deep",
        "deep.jsonl: line 3, field '(line)': nested more than 64 levels deep",
    ]
    assert result.rows_read == 4 and result.bad_rows == 2


def test_brackets_inside_strings_do_not_make_a_line_bad():
    many = row(memory="b", query="[" * 500 + "{" * 500)
    result = read_log_bytes(jsonl(row(), many), "brackets.jsonl")
    assert result.rows["memory_id"].tolist() == ["a", "b"] and not result.issues


@pytest.mark.parametrize(
    "first_row",
    [
        row(query="resourceSpans"),
        row(query='how do I read "resourceSpans" in a trace?'),
        row(store='"resourceSpans"'),
        row(resourceSpans=[]),  # a key of that name beside the log's columns
        row(extra={"resourceSpans": [{"scopeSpans": []}]}),
    ],
    ids=["query", "quoted-query", "store", "extra-key", "nested-key"],
)
def test_a_jsonl_log_mentioning_resource_spans_is_read_as_a_log(first_row):
    result = read_log_bytes(jsonl(first_row, row(memory="b", rank=2)), "week.jsonl")
    assert result.rows["memory_id"].tolist() == ["a", "b"] and not result.issues
    assert result.rows_read == 2


def test_format_is_told_by_the_first_object_not_by_a_blank_or_broken_first_line():
    request: dict[str, object] = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": []}]}]}
    result = read_log_bytes(b"\n{broken\n" + jsonl(request), "traces.jsonl")
    # read as traces: the broken line is named, the (empty) request gives no rows
    assert [(i.line, i.field) for i in result.issues] == [(2, "(line)")]
    assert len(result.rows) == 0


def test_lines_taken_out_of_a_file_read_as_the_validating_reader_reads_them():
    # the bad rows of a large log are named by reading just their lines: each line
    # arrow refuses (a field of another JSON type) is looked at alone from the start,
    # and what arrow would parse after all must be left to it, or a rank of 2.5 would
    # be named differently than in a small file
    from dashboard.logs.log_files import COLUMNS, read_jsonl, read_jsonl_lines

    values = ["x", "2", "", 2, 2.5, 0, -1, 1e300, 10**30, True, False, None, [1], {"a": 1}, "9999-12-31T00:00:00Z"]
    lines = [json.dumps({**row(), column: value}).encode() for column in COLUMNS for value in values]
    lines += [b"null", b"[1]", b'{"message_id": "m", ', b"", b'{"score": NaN, "message_id": "m", "memory_id": "a", "rank": 1}']
    numbers = np.arange(len(lines), dtype=np.int64) * 7 + 3  # where they stood in the file
    frame, at, issues = read_jsonl_lines(lines, numbers, "log.jsonl")
    whole, whole_at, whole_issues = read_jsonl(b"\n".join(lines) + b"\n", "log.jsonl")
    pd.testing.assert_frame_equal(frame, whole)
    assert at.tolist() == numbers[whole_at - 1].tolist()
    moved = [(int(numbers[i.line - 1]), i.field, i.message) for i in whole_issues]
    assert sorted((i.line, i.field, i.message) for i in issues) == sorted(moved)
    assert len(moved) > 40  # most of these lines are refused by arrow, some only by the checks after it
