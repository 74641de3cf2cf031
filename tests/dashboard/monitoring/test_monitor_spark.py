"""The monitor's one query on Spark (PySpark in local mode, Debian's OpenJDK 17): the
same rows give the file run's per-window figures and alerts, through
`memlens monitor --connect pyspark:// --table NAME` in the session that holds the
table. Empty turns are in the rows on purpose: on Spark, ibis compiles a
`count(where=...)` to a sum that is NULL for a turn with no match, which would make
kept per turn wrong; the query counts with sums of 0/1 instead."""

from __future__ import annotations

import json
import os

import pytest
from test_monitor_connect import FLAGS, assert_same_figures, production_rows

from dashboard.cli.main import main


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("memlens-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()


def test_spark_gives_the_file_runs_figures_and_alerts(spark, tmp_path, capsys):
    import pyarrow.parquet as pq

    rows = production_rows()
    path = tmp_path / "retrievals.parquet"
    pq.write_table(rows, path)
    spark.read.parquet(str(path)).createOrReplaceTempView("retrievals")

    file_code = main(["monitor", str(path), *FLAGS, "--format", "json"])
    by_file = json.loads(capsys.readouterr().out)
    # ibis's pyspark:// connects to the session running in this process, where the view is
    code = main(["monitor", "--connect", "pyspark://", "--table", "retrievals", *FLAGS, "--format", "json"])
    captured = capsys.readouterr()
    assert code == file_code == 1, captured.err
    by_spark = json.loads(captured.out)
    assert by_spark["engine"]["kind"] == "pyspark"
    assert by_file["counts"]["empty_turns"] > 0
    assert_same_figures(by_file, by_spark, rows)
