"""`memlens monitor --connect URL --table NAME`: the same rows in a real DuckDB database
and a real PostgreSQL server give the file run's per-window figures, alerts and exit
codes, with only per-window summaries coming back; the URL's password is never printed."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb
import numpy as np
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dashboard.cli.main import main
from dashboard.monitoring.synthetic import synthetic_log
from dashboard.monitoring.windows import HISTOGRAM_BINS

PASSWORD = "s3cret-Pw-41"
EXACT = ("window", "start", "end", "turns", "rows", "no_memory_turns", "no_memory_share", "kept_per_turn", "near_floor_share")
SAME = ("in_baseline", "tested", "top1_drift", "drift_threshold", "no_memory_p", "drift_p")


def production_rows() -> pa.Table:
    """Two weeks with more turns under the floor on one day, plus what a real log has:
    repeated (message_id, memory_id) pairs, empty turns and a turn with no time."""
    log = synthetic_log(14, 300, seed=41, k=3, under_floor_day=10)
    repeats = log.take(pa.array(np.arange(0, log.num_rows, 97)))  # same pair, same score, logged twice
    untimed = pa.table(
        {
            "message_id": ["no-time", "no-time"],
            "memory_id": ["mem-x", "mem-y"],
            "rank": [1, 2],
            "score": [0.6, 0.5],
            "timestamp": pa.array([None, None], pa.timestamp("us", tz="UTC")),
        }
    )
    return pa.concat_tables([log, repeats, untimed.cast(log.schema)])


@pytest.fixture(scope="module")
def rows() -> pa.Table:
    return production_rows()


@pytest.fixture(scope="module")
def log_file(rows, tmp_path_factory):
    path = tmp_path_factory.mktemp("log") / "retrievals.parquet"
    pq.write_table(rows, path)
    return path


@pytest.fixture(scope="module")
def duckdb_url(rows, tmp_path_factory):
    path = tmp_path_factory.mktemp("engine") / "logs.duckdb"
    con = duckdb.connect(str(path))
    con.register("incoming", rows)
    con.execute("CREATE TABLE retrievals AS SELECT * FROM incoming")
    # the same log under a team's own column names
    con.execute(
        "CREATE VIEW agent_reads AS SELECT message_id AS turn, memory_id AS doc, score AS relevance, timestamp AS created_at "
        "FROM retrievals"
    )
    con.close()
    return f"duckdb://{path}"


def load_postgres(url: str, table: pa.Table) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE retrievals (message_id text, memory_id text, rank bigint, score double precision, timestamp timestamptz)"
        )
        with conn.cursor() as cur, cur.copy("COPY retrievals FROM STDIN") as copy:
            for row in table.to_pylist():
                copy.write_row([row["message_id"], row["memory_id"], row["rank"], row["score"], row["timestamp"]])


@pytest.fixture(scope="module")
def postgres_url(postgres, rows):
    url = postgres.new_database()
    load_postgres(url, rows)
    # trust authentication takes any password: the URL carries one, as a team's would
    return url.replace("postgres@", f"postgres:{PASSWORD}@")


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def report(argv: list[str], capsys) -> tuple[int, dict]:
    code, out, _ = run([*argv, "--format", "json"], capsys)
    return code, json.loads(out)


def assert_same_figures(file_run: dict, engine_run: dict, rows: pa.Table) -> None:
    """Turns, rows, no-memory share and kept per turn exactly; quantiles within one
    histogram bin; the drift tests and the alerts alike."""
    assert engine_run["counts"] == file_run["counts"]
    assert engine_run["baseline"] == file_run["baseline"]
    assert len(engine_run["windows"]) == len(file_run["windows"]) > 0
    top1 = rows.group_by("message_id").aggregate([("score", "max")]).column("score_max").drop_null().to_numpy()
    width = (top1.max() - top1.min()) / HISTOGRAM_BINS
    for by_file, by_engine in zip(file_run["windows"], engine_run["windows"], strict=True):
        assert {k: by_engine[k] for k in EXACT} == {k: by_file[k] for k in EXACT}
        # the same histograms: the same drift statistics and p-values
        assert {k: by_engine[k] for k in SAME} == {k: by_file[k] for k in SAME}
        for q in ("top1_p10", "top1_p50", "top1_p90"):
            assert abs(by_engine[q] - by_file[q]) <= width, (by_file["window"], q)
    assert engine_run["alerts"] == file_run["alerts"]


FLAGS = ["--floor", "0.35", "--fail-on-alert"]


def test_duckdb_table_gives_the_file_runs_figures_alerts_and_exit_code(log_file, duckdb_url, rows, capsys):
    file_code, by_file = report(["monitor", str(log_file), *FLAGS], capsys)
    engine_code, by_engine = report(["monitor", "--connect", duckdb_url, "--table", "retrievals", *FLAGS], capsys)
    assert file_code == engine_code == 1  # the day with more turns under the floor alerts
    assert [a["window"] for a in by_file["alerts"]] == ["2026-01-11", "2026-01-11"]
    assert by_file["counts"]["merged"] > 0 and by_file["counts"]["empty_turns"] > 0 and by_file["counts"]["no_timestamp"] == 1
    assert_same_figures(by_file, by_engine, rows)
    # only summaries left the engine: a row per (window, top-1 bin), far fewer than the log's rows
    assert by_engine["engine"] == {"kind": "duckdb", "table": "retrievals", "summary_rows": by_engine["engine"]["summary_rows"]}
    assert by_engine["engine"]["summary_rows"] < rows.num_rows / 2


@pytest.mark.parametrize("window", ["1h", "1w"])
def test_hour_and_week_windows_bucket_as_the_file_run(log_file, duckdb_url, rows, window, capsys):
    flags = ["--floor", "0.35", "--window", window, "--baseline-windows", "2"]
    _, by_file = report(["monitor", str(log_file), *flags], capsys)
    _, by_engine = report(["monitor", "--connect", duckdb_url, "--table", "retrievals", *flags], capsys)
    assert_same_figures(by_file, by_engine, rows)
    if window == "1w":  # weeks start on Monday: 2026-01-01 is a Thursday
        assert [w["window"] for w in by_engine["windows"]] == ["week of 2025-12-29", "week of 2026-01-05", "week of 2026-01-12"]


def test_the_table_output_reads_as_the_file_runs(log_file, duckdb_url, capsys):
    _, by_file, _ = run(["monitor", str(log_file), *FLAGS], capsys)
    code, by_engine, _ = run(["monitor", "--connect", duckdb_url, "--table", "retrievals", *FLAGS], capsys)
    assert code == 1
    assert by_engine.splitlines()[0] == "floor 0.35, 1d windows, 14 window(s) from table retrievals (duckdb)"
    assert by_file.splitlines()[0] == "floor 0.35, 1d windows, 14 window(s) from 1 file(s)"
    # the alert lines are word for word the same
    assert [line for line in by_engine.splitlines() if line.startswith("alert:")] == [
        line for line in by_file.splitlines() if line.startswith("alert:")
    ]


def test_other_column_names_are_mapped(duckdb_url, capsys):
    _, plain = report(["monitor", "--connect", duckdb_url, "--table", "retrievals", *FLAGS], capsys)
    mapping = ["--column", "message_id=turn", "--column", "memory_id=doc", "--column", "score=relevance", "--column", "timestamp=created_at"]
    _, mapped = report(["monitor", "--connect", duckdb_url, "--table", "agent_reads", *mapping, *FLAGS], capsys)
    assert mapped["windows"] == plain["windows"] and mapped["alerts"] == plain["alerts"]


def test_postgres_table_gives_the_file_runs_figures_and_never_prints_the_password(log_file, postgres_url, rows, capsys):
    file_code, by_file = report(["monitor", str(log_file), *FLAGS], capsys)
    code, out, err = run(["monitor", "--connect", postgres_url, "--table", "retrievals", *FLAGS, "--format", "json"], capsys)
    assert code == file_code == 1
    assert PASSWORD not in out + err
    by_engine = json.loads(out)
    assert by_engine["engine"]["kind"] == "postgresql"
    assert_same_figures(by_file, by_engine, rows)


def test_postgres_errors_name_the_engine_not_the_password(postgres_url, capsys):
    missing_db = postgres_url.rsplit("/", 1)[0] + "/no_such_db"
    code, out, err = run(["monitor", "--connect", missing_db, "--table", "retrievals", "--floor", "0.35"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("memlens monitor: cannot connect to the postgresql engine: ") and "no_such_db" in err
    assert PASSWORD not in err
    code, out, err = run(["monitor", "--connect", postgres_url, "--table", "no_such_table", "--floor", "0.35"], capsys)
    assert code == 2 and "table no_such_table: not found" in err and PASSWORD not in err


def test_the_url_can_come_from_the_environment(postgres_url, monkeypatch, capsys):
    monkeypatch.setenv("MEMLENS_MONITOR_CONNECT", postgres_url)
    code, out, err = run(["monitor", "--table", "retrievals", "--floor", "0.35"], capsys)
    assert code == 0 and out.startswith("floor 0.35, 1d windows, 14 window(s) from table retrievals (postgresql)")
    assert PASSWORD not in out + err


def test_bad_rows_are_counted_and_left_out(rows, tmp_path, capsys):
    """A row with no message_id is bad; a memory with no score (what the agent's log
    writes for a NaN score) is a returned memory, as the file reader counts it."""
    odd = pa.table(
        {
            "message_id": [None, "t5"],
            "memory_id": ["mem-1", "mem-no-score"],
            "rank": [1, 9],
            "score": [0.9, None],
            "timestamp": pa.array([datetime(2026, 1, 3, tzinfo=UTC)] * 2, pa.timestamp("us", tz="UTC")),
        }
    ).cast(rows.schema)
    path = tmp_path / "logs.duckdb"
    con = duckdb.connect(str(path))
    con.register("good", rows)
    con.register("odd", odd)
    con.execute("CREATE TABLE clean AS SELECT * FROM good")
    con.execute("CREATE TABLE dirty AS SELECT * FROM good UNION ALL SELECT * FROM odd")
    con.close()
    _, clean = report(["monitor", "--connect", f"duckdb://{path}", "--table", "clean", "--floor", "0.35"], capsys)
    code, out, err = run(["monitor", "--connect", f"duckdb://{path}", "--table", "dirty", "--floor", "0.35", "--format", "json"], capsys)
    assert code == 0
    assert "warning: 1 bad row(s) skipped; the other rows are used" in err
    dirty = json.loads(out)
    assert dirty["counts"] == {**clean["counts"], "rows": clean["counts"]["rows"] + 1}
    assert dirty["issues"] == ["table dirty: 1 row(s), field 'message_id': required, missing"]


def test_unusable_tables_exit_2_naming_what(duckdb_url, tmp_path, capsys):
    code, _, err = run(["monitor", "--connect", duckdb_url, "--table", "retrievals", "--column", "timestamp=rank", "--floor", "0.35"], capsys)
    assert code == 2 and "column 'rank' (timestamp) is int64, not a timestamp" in err
    code, _, err = run(["monitor", "--connect", duckdb_url, "--table", "agent_reads", "--floor", "0.35"], capsys)
    assert code == 2 and "table agent_reads: no message_id (column 'message_id')" in err and "--column FIELD=COLUMN" in err
    code, _, err = run(["monitor", "--connect", duckdb_url, "--floor", "0.35"], capsys)
    assert code == 2 and "--connect needs --table NAME" in err
    code, _, err = run(["monitor", "--floor", "0.35"], capsys)
    assert code == 2 and "give log files (LOG...) or an engine's table" in err
    # the judged precision samples the log's rows: not from a table's summaries
    code, _, err = run(["monitor", "--connect", duckdb_url, "--table", "retrievals", "--floor", "0.35", "--judge", "j.toml"], capsys)
    assert code == 2 and "--judge grades a sample of the log's rows: give log files, not --connect" in err
    code, _, err = run(["monitor", "--connect", "snowflake://u:pw-9@acct/db", "--table", "t", "--floor", "0.35"], capsys)
    assert code == 2 and "snowflake" in err and "pw-9" not in err
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).execute("CREATE TABLE logs (message_id VARCHAR, memory_id VARCHAR, score DOUBLE, timestamp TIMESTAMPTZ)").close()
    code, _, err = run(["monitor", "--connect", f"duckdb://{empty}", "--table", "logs", "--floor", "0.35"], capsys)
    assert code == 2 and "no turn with a timestamp in table logs (0 turns read)" in err


def test_repeats_that_disagree_are_counted_as_the_file_run_counts_them(rows, tmp_path, capsys):
    """A repeated pair with another score: the table run's second query finds it."""
    first = rows.slice(0, 1).to_pylist()[0]
    disagreeing = pa.Table.from_pylist([{**first, "score": first["score"] + 0.01}], schema=rows.schema)
    logged = pa.concat_tables([rows, disagreeing])
    path = tmp_path / "logs.parquet"
    pq.write_table(logged, path)
    engine = tmp_path / "logs.duckdb"
    con = duckdb.connect(str(engine))
    con.register("incoming", logged)
    con.execute("CREATE TABLE retrievals AS SELECT * FROM incoming")
    con.close()
    _, by_file = report(["monitor", str(path), "--floor", "0.35"], capsys)
    _, by_engine = report(["monitor", "--connect", f"duckdb://{engine}", "--table", "retrievals", "--floor", "0.35"], capsys)
    assert by_file["counts"]["conflicts"] == by_engine["counts"]["conflicts"] == 1
    assert by_engine["counts"] == by_file["counts"]
