"""The monitor's one query as each engine runs it: golden SQL for BigQuery, Snowflake,
Trino, Databricks (Spark SQL), ClickHouse, PostgreSQL and DuckDB, checked against what ibis
compiles today, parsed back in its own dialect, and free of the constructs that give
different figures on some engines. The DuckDB and PostgreSQL goldens are also run on
real engines and must give the summaries ibis's own run gives.

After an intended change to the query: `python tests/dashboard/monitoring/test_warehouse_sql.py`
rewrites the goldens; read their diff before committing it."""

from __future__ import annotations

import re
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import ibis
import psycopg
import pytest
import sqlglot

from dashboard.monitoring import warehouse
from dashboard.monitoring.synthetic import synthetic_log

GOLDEN = Path(__file__).parent / "golden"
# Spark SQL is Databricks's dialect (ibis's "pyspark" one needs pyspark itself to compile)
DIALECTS = ("bigquery", "snowflake", "trino", "databricks", "clickhouse", "postgres", "duckdb")
FLOOR, WINDOW = 0.35, "1d"


def golden_path(dialect: str) -> Path:
    return GOLDEN / f"monitor_{dialect}.sql"


def write_goldens() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for dialect in DIALECTS:
        golden_path(dialect).write_text(warehouse.compile_sql(FLOOR, WINDOW, dialect) + "\n", encoding="utf-8")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_query_compiles_to_its_golden_sql(dialect):
    assert warehouse.compile_sql(FLOOR, WINDOW, dialect) + "\n" == golden_path(dialect).read_text(encoding="utf-8")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_golden_sql_parses_in_its_dialect_and_avoids_what_differs_between_engines(dialect):
    sql = golden_path(dialect).read_text(encoding="utf-8")
    parsed = sqlglot.parse_one(sql, read=dialect)
    assert parsed.find(sqlglot.exp.Select) is not None
    # count(where=...) compiles to FILTER / countIf / a SUM that is NULL for a turn
    # with no match (an empty turn): every conditional count is a SUM of a 0/1 CASE
    # (or IF), which is 0 there
    assert parsed.find(sqlglot.exp.Filter) is None and parsed.find(sqlglot.exp.CountIf) is None
    conditional_sums = [s for s in parsed.find_all(sqlglot.exp.Sum) if isinstance(s.this, (sqlglot.exp.Case, sqlglot.exp.If))]
    assert len(conditional_sums) >= 5  # kept, merged, conflicts, no memory, near the floor, empty
    text = sql.lower()
    # no quantile function: some are missing (BigQuery, Trino) or sampled (ClickHouse)
    assert not re.search(r"quantile|percentile|approx", text)
    # one pass: the log's table is read once
    assert len(re.findall(r"from [`\"]?retrievals", text)) == 1


def summary_rows(found) -> list[tuple]:
    """Rows to compare: PostgreSQL's sums as integers (psycopg gives numeric as
    Decimal), in one order (engines put NULL first or last)."""

    def plain(value):
        return int(value) if isinstance(value, Decimal) else value

    rows = [tuple(plain(v) for v in row) for row in found]
    return sorted(rows, key=lambda row: tuple((v is None, 0 if v is None else v) for v in row))


@pytest.fixture(scope="module")
def log_rows():
    return synthetic_log(5, 200, seed=7, k=3, under_floor_day=3)


def test_the_duckdb_golden_gives_ibis_run_summaries(log_rows, tmp_path):
    path = tmp_path / "logs.duckdb"
    con = duckdb.connect(str(path))
    con.register("incoming", log_rows)
    con.execute("CREATE TABLE retrievals AS SELECT * FROM incoming")
    by_golden = summary_rows(con.execute(golden_path("duckdb").read_text()).fetchall())
    con.close()
    engine = ibis.connect(f"duckdb://{path}")
    by_ibis = warehouse.summary_expression(engine.table("retrievals"), FLOOR, WINDOW).to_pyarrow()
    engine.disconnect()
    assert by_golden == summary_rows(zip(*by_ibis.to_pydict().values(), strict=True))
    assert len(by_golden) > 5


def test_the_postgres_golden_through_psycopg_gives_ibis_run_summaries(log_rows, postgres):
    url = postgres.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE retrievals (message_id text, memory_id text, rank bigint, score double precision, timestamp timestamptz)")
        with conn.cursor() as cur, cur.copy("COPY retrievals FROM STDIN") as copy:
            for row in log_rows.to_pylist():
                copy.write_row([row["message_id"], row["memory_id"], row["rank"], row["score"], row["timestamp"]])
        by_golden = summary_rows(conn.execute(golden_path("postgres").read_text()).fetchall())
    engine = warehouse.connect(url)
    by_ibis = warehouse.summary_expression(engine.table("retrievals"), FLOOR, WINDOW).to_pyarrow()
    engine.disconnect()
    assert by_golden == summary_rows(zip(*by_ibis.to_pydict().values(), strict=True))


if __name__ == "__main__":
    write_goldens()
    print(f"wrote {len(DIALECTS)} goldens in {GOLDEN}", file=sys.stderr)
