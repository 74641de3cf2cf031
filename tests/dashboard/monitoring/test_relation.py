"""The logs as one DuckDB relation: clean files read by DuckDB, a file with bad rows
by the validating reader (every bad row named, every good row used), the same turns
whatever the format."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from dashboard.logs.log_files import LogFormatError
from dashboard.monitoring.relation import expand_paths, open_logs, turn_queries
from dashboard.monitoring.synthetic import synthetic_log, write_daily
from dashboard.monitoring.windows import window_figures


def figures(logs, floor=0.35):
    return [(w.start, w.turns, w.rows, w.no_memory, round(w.kept_per_turn, 9), w.p50) for w in window_figures(logs.con, floor)]


@pytest.fixture(scope="module")
def table():
    return synthetic_log(3, 300, seed=7, k=3)


def write_csv(table, path):
    import pyarrow.csv as pc

    pc.write_csv(table, path)


def test_jsonl_csv_and_parquet_give_the_same_windows_on_the_fast_path(tmp_path, table):
    jsonl = write_daily(table, tmp_path / "jsonl", kind="jsonl")
    parquet = write_daily(table, tmp_path / "parquet")
    write_csv(table, tmp_path / "log.csv")
    by_jsonl = open_logs([str(p) for p in jsonl])
    by_parquet = open_logs([str(p) for p in parquet])
    by_csv = open_logs([str(tmp_path / "log.csv")])
    for logs in (by_jsonl, by_parquet, by_csv):
        assert not logs.issues and not logs.validated_files
        assert logs.counts()["turns"] == 900 and logs.counts()["empty_turns"] > 0
    assert figures(by_jsonl) == figures(by_parquet) == figures(by_csv)
    assert sum(w[1] for w in figures(by_jsonl)) == 900


def test_a_file_with_bad_rows_goes_through_the_validating_reader_and_names_each_one(tmp_path, table):
    clean, dirty = write_daily(table, tmp_path, kind="jsonl")[:2]
    lines = dirty.read_text().splitlines()
    first, second = [i for i, line in enumerate(lines) if '"rank": 1,' in line][1:3]
    lines[first] = "{not json"
    lines[second] = lines[second].replace('"rank": 1,', '"rank": "1",')
    dirty.write_text("\n".join(lines) + "\n")
    logs = open_logs([str(clean), str(dirty)])
    assert logs.fast_files == [str(clean)] and logs.validated_files == [str(dirty)]
    assert [(issue.file, issue.line, issue.field) for issue in logs.issues] == [
        (str(dirty), first + 1, "(line)"), (str(dirty), second + 1, "rank")]
    # every good row of the bad file is used
    rows = sum(1 for line in lines if '"memory_id"' in line) - 1  # the broken line has none left; the "1" row is out
    clean_rows = sum(1 for line in clean.read_text().splitlines() if '"memory_id"' in line)
    assert logs.counts()["rows"] == rows + clean_rows


def test_a_value_duckdb_would_cast_but_memlens_refuses_is_still_a_bad_row(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(
        json.dumps({"message_id": "m1", "memory_id": "a", "rank": 1, "score": 0.5, "timestamp": "2026-01-01T00:00:00Z"}) + "\n"
        + json.dumps({"message_id": 7, "memory_id": "b", "rank": 1, "score": 0.5}) + "\n"
        + json.dumps({"message_id": "m3", "memory_id": "c", "rank": 1, "score": "0.5"}) + "\n"
        + json.dumps({"message_id": "m4", "memory_id": "d", "rank": 2, "score": 0.5, "timestamp": "last tuesday"}) + "\n"
    )
    logs = open_logs([str(path)])
    assert [(issue.line, issue.field) for issue in logs.issues] == [(2, "message_id"), (3, "score"), (4, "timestamp")]
    assert logs.counts()["turns"] == 1


def test_repeated_pairs_are_merged_and_empty_turn_rows_counted(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(
        "message_id,memory_id,rank,score,timestamp\n"
        "m1,a,1,0.5,2026-01-01T00:00:00Z\n"
        "m1,a,1,0.5,2026-01-01T00:00:00Z\n"
        "m1,b,2,0.3,2026-01-01T00:00:00Z\n"
        "m2,,,,2026-01-01T01:00:00Z\n"
    )
    logs = open_logs([str(path)])
    assert logs.fast_files == [str(path)]
    assert logs.counts() == {"turns": 2, "rows": 2, "empty_turns": 1, "no_timestamp": 0, "merged": 1, "conflicts": 0}
    (window,) = window_figures(logs.con, 0.4)
    assert (window.turns, window.no_memory, window.kept_per_turn) == (2, 1, 0.5)


def test_a_repeat_that_disagrees_keeps_the_earliest_files_score_and_is_counted(tmp_path):
    header = "message_id,memory_id,rank,score,timestamp\n"
    first, second = tmp_path / "2026-01-01.csv", tmp_path / "2026-01-02.csv"
    first.write_text(header + "m1,a,1,0.5,2026-01-01T00:00:00Z\nm1,b,2,0.3,2026-01-01T00:00:00Z\n")
    # m1/a again, scored 0.2 this time (under the floor); m1/b again with the same score
    second.write_text(header + "m1,a,1,0.2,2026-01-02T00:00:00Z\nm1,b,2,0.3,2026-01-02T00:00:00Z\n")
    logs = open_logs([str(first), str(second)])
    assert logs.counts() == {"turns": 1, "rows": 2, "empty_turns": 0, "no_timestamp": 0, "merged": 2, "conflicts": 1}
    (window,) = window_figures(logs.con, 0.4)
    # the kept score is the first file's 0.5: the turn keeps a memory at 0.4
    assert (window.turns, window.no_memory, window.kept_per_turn, window.p50) == (1, 0, 1.0, 0.5)


def test_otlp_and_the_read_log_join_the_same_relation(tmp_path):
    read_log = tmp_path / "reads.jsonl"
    read_log.write_text(
        json.dumps({"at": "2026-01-01T09:00:00.000+00:00", "source": "inspect", "store": "s", "query_hash": "q1", "user_hash": None,
                    "k": 5, "candidate_count": 1, "top_k": [{"memory_id": "a", "rank": 1, "score": 0.6}], "latency_ms": 1, "error": None}) + "\n"
        + json.dumps({"at": "2026-01-01T09:01:00.000+00:00", "source": "inspect", "store": "s", "query_hash": "q2", "user_hash": None,
                      "k": 5, "candidate_count": 0, "top_k": [], "latency_ms": 1, "error": None}) + "\n"
    )
    logs = open_logs([str(read_log)])
    assert logs.validated_files == [str(read_log)]
    assert logs.counts()["turns"] == 2 and logs.counts()["empty_turns"] == 1


def test_folders_and_globs(tmp_path, table):
    paths = write_daily(table, tmp_path / "days")
    assert expand_paths([str(tmp_path / "days")]) == [str(p) for p in paths]
    assert expand_paths([str(tmp_path / "days" / "*.parquet"), str(paths[0])]) == [str(p) for p in paths]
    with pytest.raises(LogFormatError, match="no file matches"):
        expand_paths([str(tmp_path / "nothing-*.jsonl")])


def test_a_parquet_file_without_a_required_column_says_which(tmp_path, table):
    path = tmp_path / "log.parquet"
    pq.write_table(table.drop_columns(["score"]), path)
    with pytest.raises(LogFormatError, match="missing column"):
        open_logs([str(path)])


def test_a_number_where_an_id_belongs_is_a_bad_row_even_past_the_sampled_head(tmp_path):
    # the monitor reads text fields the sampled head shows as plain text the cheap way;
    # a number later in the file must still be caught, and numeric-looking text kept
    rows = [{"message_id": f"m{i // 3}", "memory_id": f"k{i}", "rank": i % 3 + 1, "score": 0.5} for i in range(3000)]
    rows[2500]["memory_id"] = 17
    rows[2700]["memory_id"] = "17"
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    logs = open_logs([str(path)])
    assert [(issue.line, issue.field) for issue in logs.issues] == [(2501, "memory_id")]
    assert logs.counts()["rows"] == 2999


# A turn's rows as an agent logs them, with the message text where the team keeps it:
# t1's first row has a blank text (its second row's counts), t2 has none, t3's text
# is not ASCII.
QUERY_ROWS = [
    {"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.6, "query": "  ", "timestamp": "2026-01-01T09:00:00Z"},
    {"message_id": "t1", "memory_id": "m2", "rank": 2, "score": 0.5, "query": "where do I live?", "timestamp": "2026-01-01T09:00:00Z"},
    {"message_id": "t2", "memory_id": "m3", "rank": 1, "score": 0.7, "query": None, "timestamp": "2026-01-01T10:00:00Z"},
    {"message_id": "t3", "memory_id": "m4", "rank": 1, "score": 0.8, "query": "¿dónde está José?", "timestamp": "2026-01-01T11:00:00Z"},
]
QUERIES = {"t1": "where do I live?", "t3": "¿dónde está José?"}


def test_the_relation_carries_each_turns_query_text_on_every_reading_path(tmp_path):
    """The monitor's judge and a session drawn from a window take the message text
    from the one read of the logs: DuckDB's (JSONL, CSV, Parquet) and the validating
    reader's (a file DuckDB will not parse) alike."""
    import pyarrow as pa
    import pyarrow.csv as pc

    lines = "".join(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n" for row in QUERY_ROWS)
    (tmp_path / "log.jsonl").write_text(lines, encoding="utf-8")
    (tmp_path / "broken.jsonl").write_text(lines + "{not json\n", encoding="utf-8")
    table = pa.Table.from_pylist(QUERY_ROWS)
    pq.write_table(table, tmp_path / "log.parquet")
    pc.write_csv(table, tmp_path / "log.csv")
    for name in ("log.jsonl", "log.parquet", "log.csv", "broken.jsonl"):
        logs = open_logs([str(tmp_path / name)], scores=False, floor=0.35)
        assert turn_queries(logs.con, {"t1", "t2", "t3", "t9"}) == QUERIES, name
    assert open_logs([str(tmp_path / "broken.jsonl")]).validated_files == [str(tmp_path / "broken.jsonl")]


def test_a_turn_in_two_files_takes_its_text_from_the_first(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    row = {"message_id": "t1", "memory_id": "m1", "rank": 1, "score": 0.6, "timestamp": "2026-01-01T09:00:00Z"}
    first.write_text(json.dumps(row | {"query": "asked first"}) + "\n", encoding="utf-8")
    second.write_text(json.dumps(row | {"memory_id": "m2", "query": "asked again"}) + "\n", encoding="utf-8")
    assert turn_queries(open_logs([str(first), str(second)]).con, ["t1"]) == {"t1": "asked first"}
    assert turn_queries(open_logs([str(second), str(first)]).con, ["t1"]) == {"t1": "asked again"}
