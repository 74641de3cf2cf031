"""The DuckDB fast path gives exactly what the validating reader gives on a clean file,
and hands any file with a bad row to the validating reader, which names it."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dashboard.logs.retrieval_log import FAST_MIN_BYTES, read_log, read_log_bytes

TRICKY: list[dict[str, Any]] = [
    {"message_id": 'm"1', "memory_id": "a\\b", "rank": 1, "score": 1, "query": "café ☕ \u2028 ok", "timestamp": "2026-01-05T09:00:00Z"},
    {"message_id": 'm"1', "memory_id": "é", "rank": 2.0, "score": -0.25, "user_id": None, "timestamp": "2026-01-05T11:00:00+02:00"},
    {"message_id": "m2", "memory_id": None, "rank": None, "score": None, "user_id": "sam", "store": "s:1"},
    {"message_id": "m3", "memory_id": "x", "rank": 3, "score": 0.5, "timestamp": "2026-01-05"},
]


def same(fast, slow):
    assert fast.columnar and not slow.columnar
    assert fast.rows.to_dict("records") == slow.rows.to_dict("records")
    assert fast.empty_turns.to_dict("records") == slow.empty_turns.to_dict("records")
    assert (fast.summary(), fast.issues, fast.conflicts) == (slow.summary(), slow.issues, slow.conflicts)
    assert list(fast.rows.dtypes) == list(slow.rows.dtypes)


def slow_read(path):
    # under FAST_MIN_BYTES, bytes in memory take the validating reader
    return read_log_bytes(path.read_bytes(), str(path))


def test_a_clean_jsonl_file_reads_the_same_on_both_paths(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in TRICKY), encoding="utf-8")
    same(read_log(path), slow_read(path))
    assert read_log(path).rows["message_id"].tolist() == ['m"1', 'm"1', "m3"]
    assert read_log(path).rows["memory_id"].tolist() == ["a\\b", "é", "x"]


def test_a_clean_csv_and_parquet_file_read_the_same_on_both_paths(tmp_path):
    table = pa.Table.from_pylist([{k: row.get(k) for k in ("message_id", "memory_id", "rank", "score", "user_id", "timestamp", "store")} for row in TRICKY])
    pq.write_table(table, tmp_path / "log.parquet")
    same(read_log(tmp_path / "log.parquet"), slow_read(tmp_path / "log.parquet"))
    (tmp_path / "log.csv").write_text(
        "message_id,memory_id,rank,score,timestamp\n"
        '"m,1",a,1,0.5,2026-01-05T09:00:00Z\n'
        "m2,,,,2026-01-05T09:00:00Z\n"
        "m3,b,1,1e-3,\n",
        encoding="utf-8",
    )
    same(read_log(tmp_path / "log.csv"), slow_read(tmp_path / "log.csv"))


@pytest.mark.parametrize(
    "line, field",
    [
        ('{"message_id": "m9", "memory_id": "b", "rank": "2", "score": 0.4}', "rank"),  # DuckDB would cast "2"
        ('{"message_id": 9, "memory_id": "b", "rank": 2, "score": 0.4}', "message_id"),  # ... and 9 to "9"
        ('{"message_id": "m9", "memory_id": "b", "rank": 2, "score": 0.4, "user_id": true}', "user_id"),
        ('{"message_id": "m9", "memory_id": "b", "rank": 2, "score": 0.4, "timestamp": "soon"}', "timestamp"),
        ('{"message_id": "m9", "memory_id": "b", "rank": 2, "score": 0.4}{"message_id": "m9"}', "(line)"),
        ("null", "(line)"),
        # blank as the validating reader's str.strip() sees it, not only spaces
        ('{"message_id": "m9", "memory_id": "\\t", "rank": 2, "score": 0.4}', "memory_id"),
        ('{"message_id": "\\u3000 ", "memory_id": "b", "rank": 2, "score": 0.4}', "message_id"),
    ],
)
def test_one_bad_line_is_named_and_the_other_rows_kept(tmp_path, line, field):
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(TRICKY[3]) + "\n" + line + "\n")
    log = read_log(path)
    assert [(issue.line, issue.field) for issue in log.issues] == [(2, field)]  # named by the streaming pass; the rest stay in DuckDB
    assert log.rows["memory_id"].tolist() == ["x"]


def test_repeated_pairs_and_blank_lines_take_the_validating_reader(tmp_path):
    path = tmp_path / "log.jsonl"
    row = json.dumps(TRICKY[3])
    path.write_text(f"{row}\n\n{row.replace('0.5', '0.6')}\n")
    log = read_log(path)
    assert log.duplicates == 1 and [str(c) for c in log.conflicts] == [
        f"{path}: line 3, field 'score': repeats line 1 with score 0.6 instead of 0.5; line 1 is kept"
    ]


def test_a_large_upload_takes_the_fast_path_and_keeps_its_name(tmp_path):
    rows = [{"message_id": f"m{i // 3}", "memory_id": f"k{i}", "rank": i % 3 + 1, "score": 0.5} for i in range(FAST_MIN_BYTES // 50)]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    assert len(data) >= FAST_MIN_BYTES
    log = read_log_bytes(data, "week.jsonl")
    assert len(log.rows) == len(rows) and log.source == "week.jsonl" and log.columnar
    broken = read_log_bytes(data + b'{"message_id": "m", "memory_id": "z", "rank": 0, "score": 0.1}\n', "week.jsonl")
    assert [str(i) for i in broken.issues] == [f"week.jsonl: line {len(rows) + 1}, field 'rank': must be 1 or more (ranks are 1-based)"]


def big_log(rows: int = 3000) -> list[dict[str, Any]]:
    # more than columnar.SAMPLE_BYTES: what comes late in it is past the sampled head
    return [{"message_id": f"m{i // 3}", "memory_id": f"k{i}", "rank": i % 3 + 1, "score": 0.5, "user_id": "sam", "timestamp": "2026-01-05T09:00:00Z"} for i in range(rows)]


def test_text_that_looks_like_a_number_or_true_is_still_text_and_stays_on_the_fast_path(tmp_path):
    # string ids such as "12345", "true" or "[x]" are what a number, a boolean or a list
    # becomes when read as text: the reader makes sure they were strings, and keeps them
    rows = big_log()
    rows[-3:] = [
        {"message_id": "12345", "memory_id": "true", "rank": 1, "score": 0.1, "user_id": "[x]", "query": "42"},
        {"message_id": "12345", "memory_id": "-1.5e3", "rank": 2, "score": 0.2, "user_id": "{y}", "query": "NaN"},
        {"message_id": "12345", "memory_id": "infinity", "rank": 3, "score": 0.3, "user_id": "null", "query": "false"},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    fast = read_log(path, include_query=True)
    same(fast, slow_read(path))
    assert fast.rows["memory_id"].tolist()[-3:] == ["true", "-1.5e3", "infinity"]
    assert fast.rows["user_id"].tolist()[-3:] == ["[x]", "{y}", "null"]


@pytest.mark.parametrize(
    "field, value",
    [
        ("memory_id", 17), ("message_id", True), ("user_id", [1]), ("store", {"a": 1}), ("query", 4.5), ("memory_id", ""),
        ("timestamp", 1767225600), ("timestamp", "last tuesday"), ("rank", "2"), ("score", "0.5"),
    ],
)
def test_a_value_of_another_type_far_into_a_large_file_is_named_by_line(tmp_path, field, value):
    rows = big_log()
    rows[2500][field] = value
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    log = read_log(path)
    assert [(issue.line, issue.field) for issue in log.issues] == [(2501, field)]
    assert len(log.rows) == len(rows) - 1
    # named by a look at its line, not by a read of the whole file in pandas; only a
    # timestamp that is not one stops DuckDB's scan (columnar.read_jsonl_rows)
    assert log.columnar == (field != "timestamp")


@pytest.mark.parametrize("bad_every", [600, 2], ids=["a few bad rows", "half the rows bad"])
def test_bad_rows_repeats_and_empty_turns_read_the_same_on_both_paths(tmp_path, bad_every):
    # a few bad rows are cut out of the scanned table as slices, many are filtered out:
    # either way the rows, the issues, the repeats and the empty turns are the
    # validating reader's
    kinds: list[dict[str, Any]] = [
        {"rank": 0}, {"rank": 1.5}, {"rank": "2"}, {"score": "high"}, {"score": True},
        {"memory_id": None}, {"timestamp": "9999-12-31T00:00:00Z"}, {"message_id": None},
    ]
    rows = big_log()
    for n, index in enumerate(range(7, len(rows), bad_every)):
        rows[index] = {**rows[index], **kinds[n % len(kinds)]}
    empty = {"message_id": "empty-1", "memory_id": None, "rank": None, "score": None}
    # rows 50 and 52 are never made bad (the bad ones are 7 + a multiple of bad_every)
    rows[100:100] = [empty, {**rows[50], "score": 0.75}, dict(empty), {**rows[52]}, {**empty, "message_id": "empty-2"}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    fast, slow = read_log(path), slow_read(path)
    same(fast, slow)
    assert fast.duplicates == 3  # two repeated pairs and a repeated empty turn
    assert [(c.line, c.field) for c in fast.conflicts] == [(102, "score")]
    assert len(fast.empty_turns) == 2
    assert fast.bad_rows == len(range(7, len(big_log()), bad_every))


@pytest.mark.parametrize("upper_half", [True, False], ids=["hash from 2**63", "hash under 2**63"])
def test_one_repeated_pair_is_merged_whatever_its_hash(tmp_path, upper_half):
    # the repeats are found from the pairs' 64-bit hashes; NumPy 2.0 failed (an
    # OverflowError out of read_log) to look up one repeated hash at or above 2**63
    import duckdb

    with duckdb.connect() as con:
        memory = next(
            f"x{i}" for i in range(1000)
            if (con.execute("SELECT hash(?, ?)", ["m0", f"x{i}"]).fetchone()[0] >= 2**63) == upper_half
        )
    rows = big_log()
    rows[0]["memory_id"] = memory
    rows[1500] = dict(rows[0])  # the same pair again, later in the file
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    log = read_log(path)
    assert log.columnar and log.duplicates == 1 and not log.issues
    assert len(log.rows) == len(rows) - 1
