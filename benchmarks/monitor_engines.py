"""The same synthetic log through the file run, PostgreSQL and PySpark, per-window
figures side by side: `python -m benchmarks.monitor_engines [--days D] [--turns-per-day N]`.

Writes a seeded log (dashboard/monitoring/synthetic.py: more turns under the floor on
one day, 2% empty turns) as a Parquet file, loads the same rows into a throwaway
PostgreSQL server (tests/postgres_server.py) and a local Spark session (PySpark,
local[2]), and runs `memlens monitor` on each: the file, `--connect postgresql://...`
and `--connect pyspark://`. Prints each window's turns, rows, no-memory share, kept per
turn and top-1 p50 for the three side by side, with the alerts and wall times (Spark's
includes starting its JVM). Exits non-zero when turns, rows, no-memory counts, kept per
turn or the alerts differ, or a p50 is more than one histogram bin off. Appends the
table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from benchmarks._common import ROOT, exit_code, report, table
from dashboard.cli.main import main as memlens
from dashboard.monitoring.synthetic import FLOOR, synthetic_log
from dashboard.monitoring.windows import HISTOGRAM_BINS

sys.path.insert(0, str(ROOT / "tests"))


def run_monitor(argv: list[str]) -> tuple[dict, float]:
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        memlens([*argv, "--floor", str(FLOOR), "--format", "json"])
    return json.loads(out.getvalue()), time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.monitor_engines")
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--turns-per-day", type=int, default=2000)
    args = parser.parse_args(argv)

    import psycopg
    from postgres_server import PostgresServer

    rows = synthetic_log(args.days, args.turns_per_day, seed=41, k=3, under_floor_day=args.days - 4)
    results: dict[str, tuple[dict, float]] = {}
    with tempfile.TemporaryDirectory(prefix="memlens-bench-engines-") as directory:
        path = Path(directory) / "retrievals.parquet"
        pq.write_table(rows, path)
        results["file (DuckDB)"] = run_monitor(["monitor", str(path)])

        server = PostgresServer().start()
        try:
            url = server.new_database()
            buffer = io.BytesIO()
            pacsv.write_csv(rows, buffer)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE TABLE retrievals (message_id text, memory_id text, rank bigint, score double precision, timestamp timestamptz)")
                with conn.cursor() as cur, cur.copy("COPY retrievals FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
                    copy.write(buffer.getvalue())
            results["PostgreSQL"] = run_monitor(["monitor", "--connect", url, "--table", "retrievals"])
        finally:
            server.stop()

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from pyspark.sql import SparkSession

        started = time.perf_counter()
        session = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
        session.read.parquet(str(path)).createOrReplaceTempView("retrievals")
        spark, _ = run_monitor(["monitor", "--connect", "pyspark://", "--table", "retrievals"])
        results["PySpark local"] = (spark, time.perf_counter() - started)  # the JVM's start included
        session.stop()

    names = list(results)
    reports = [results[name][0] for name in names]
    top1 = rows.group_by("message_id").aggregate([("score", "max")]).column("score_max").drop_null().to_numpy()
    width = (top1.max() - top1.min()) / HISTOGRAM_BINS
    problems = []
    lines = []
    for index, window in enumerate(reports[0]["windows"]):
        others = [r["windows"][index] for r in reports]
        for key in ("window", "turns", "rows", "no_memory_turns", "kept_per_turn"):
            if len({json.dumps(w[key]) for w in others}) != 1:
                problems.append(f"{window['window']}: {key} differs: {[w[key] for w in others]}")
        if any(abs(w["top1_p50"] - window["top1_p50"]) > width for w in others):
            problems.append(f"{window['window']}: p50 more than one bin apart")
        lines.append(
            [window["window"]]
            + ["/".join(f"{w['turns']:,}" for w in others)]
            + ["/".join(f"{w['rows']:,}" for w in others)]
            + ["/".join(f"{w['no_memory_share']:.1%}" for w in others)]
            + ["/".join(f"{w['kept_per_turn']:.4f}" for w in others)]
            + ["/".join(f"{w['top1_p50']:.4f}" for w in others)]
            + [" ".join(sorted({a["figure"] for a in r["alerts"] if a["window"] == window["window"]})) or "-" for r in reports[:1]]
        )
    alerts = [[(a["window"], a["figure"]) for a in r["alerts"]] for r in reports]
    if any(a != alerts[0] for a in alerts):
        problems.append(f"the alerts differ: {alerts}")
    body = table(
        ["window", "turns (file/PostgreSQL/Spark)", "rows", "no memory", "kept/turn", "top-1 p50", "alerts (all three)"], lines
    )
    body += "\n\n" + table(
        ["run", "wall s", "alerts"],
        [[name, results[name][1], len(results[name][0]["alerts"])] for name in names],
    )
    body += (
        f"\n\n{rows.num_rows:,} rows ({args.days * args.turns_per_day:,} turns at k=3, 2% empty turns, more turns under the floor"
        f" on day {args.days - 3}), floor {FLOOR}. p50: exact (quantile_cont) for the file run, from the 2,000-bin top-1 histogram"
        f" (bin width {width:.5f}) on the engines. The Spark time includes starting the JVM and session; PostgreSQL's is"
        " the query on a loopback server. One run each."
    )
    report("memlens monitor on three engines, same rows side by side (benchmarks/monitor_engines.py)", body)
    return exit_code(problems)


if __name__ == "__main__":
    sys.exit(main())
