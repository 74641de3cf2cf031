"""`memlens monitor --connect` on PostgreSQL, and the DuckDB default against today's
monitor: `python -m benchmarks.monitor_connect [--rows N] [--repeat R] [--baseline-ref REF]`.

Writes N rows (default 2,000,000: 400,000 turns at k=5, a month; the issue's target is
set at 10,000,000, `--rows 10000000`) once as 30 daily Parquet files and once into a
table of a throwaway PostgreSQL server (tests/postgres_server.py), then, in one run,
each case in a fresh process:

    hand-written SQL through psycopg   the baseline for --connect: one query computing
                                       the per-window figures (turns, rows, no-memory
                                       count, kept per turn, top-1 p10/p50/p90 with
                                       percentile_cont, near-floor share), repeats merged,
                                       as an engineer would write it for PostgreSQL
    memlens monitor --connect          the same windows from the same table, with the
                                       top-1 histograms, bad-row and conflict counts, the
                                       baseline and both alert tests
    today's monitor on the files       `memlens monitor DIR` as `--baseline-ref` has it
                                       (default main, checked out by `git worktree` in a
                                       temporary folder): the baseline for the DuckDB
                                       default
    memlens monitor on the files       the same command from this checkout

Target: --connect at most 1.5x the hand-written query, its process's peak memory under
300 MB (only summaries come back); the file run no slower than today's. All four must
agree on every window's turns, rows and no-memory count, or the script exits non-zero.
Appends the table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from benchmarks._common import ROOT, exit_code, median, report, table
from benchmarks.monitor import CHILD, MONITOR_BODY
from dashboard.monitoring.synthetic import FLOOR, START, synthetic_log

sys.path.insert(0, str(ROOT / "tests"))

DAYS = 30
K = 5

HAND_POSTGRES = """
WITH pairs AS (
    SELECT message_id, memory_id, min(score) AS score, min(timestamp) AS ts
    FROM retrievals GROUP BY message_id, memory_id
), turns AS (
    SELECT message_id, min(ts) AS ts, max(score) AS top1, count(memory_id) AS rows,
           count(*) FILTER (WHERE score >= {floor}) AS kept
    FROM pairs GROUP BY message_id
)
SELECT floor(extract(epoch FROM ts) / 86400)::bigint AS day, count(*) AS turns, sum(rows) AS rows,
       count(*) FILTER (WHERE top1 IS NULL OR top1 < {floor}) AS no_memory, avg(kept) AS kept_per_turn,
       percentile_cont(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY top1) AS top1,
       count(*) FILTER (WHERE abs(top1 - {floor}) <= 0.02)::float / nullif(count(top1), 0) AS near
FROM turns WHERE ts IS NOT NULL GROUP BY 1 ORDER BY 1
"""

HAND_BODY = """
import datetime, psycopg
with psycopg.connect({url!r}) as conn:
    rows = conn.execute({query!r}).fetchall()
epoch = datetime.date(1970, 1, 1)
windows = [[str(epoch + datetime.timedelta(days=r[0])), int(r[1]), int(r[2]), int(r[3])] for r in rows]
"""

CONNECT_BODY = """
import contextlib, io
from dashboard.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["monitor", "--connect", {url!r}, "--table", "retrievals", "--floor", {floor!r}, "--window", "1d", "--format", "json"])
windows = [[w["window"], w["turns"], w["rows"], w["no_memory_turns"]] for w in json.loads(out.getvalue())["windows"]]
"""


def write_month(folder: Path, url: str, rows: int) -> int:
    """30 daily Parquet files and the same rows in PostgreSQL, one day at a time."""
    import psycopg

    turns_per_day = rows // K // DAYS
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE retrievals (message_id text, memory_id text, rank bigint, score double precision, timestamp timestamptz)"
        )
        for day in range(DAYS):
            part = synthetic_log(
                1, turns_per_day, seed=day, k=K, empty_share=0.02, start=START + timedelta(days=day), first_turn=day * turns_per_day
            )
            pq.write_table(part, folder / f"{(START + timedelta(days=day)):%Y-%m-%d}.parquet")
            buffer = io.BytesIO()
            pacsv.write_csv(part, buffer)
            with conn.cursor() as cur, cur.copy("COPY retrievals FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
                copy.write(buffer.getvalue())
        conn.execute("ANALYZE retrievals")
        counted = conn.execute("SELECT count(*) FROM retrievals").fetchone()
    on_disk = sum(pq.ParquetFile(path).metadata.num_rows for path in folder.glob("*.parquet"))
    assert counted is not None and counted[0] == on_disk, (counted, on_disk)
    return on_disk


def run_child(body: str, root: Path) -> dict:
    script = CHILD.format(root=str(root), body=body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.monitor_connect")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-ref", default="main", help="the git commit or branch whose monitor is today's (default main)")
    args = parser.parse_args(argv)

    from postgres_server import PostgresServer

    baseline = Path(tempfile.mkdtemp(prefix="memlens-bench-baseline-")) / "checkout"
    subprocess.run(["git", "worktree", "add", "--detach", str(baseline), args.baseline_ref], cwd=ROOT, check=True, capture_output=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=baseline, check=True, capture_output=True, text=True).stdout.strip()
    server = PostgresServer().start()
    try:
        url = server.new_database()
        with tempfile.TemporaryDirectory(prefix="memlens-bench-connect-") as directory:
            folder = Path(directory)
            started = time.perf_counter()
            rows = write_month(folder, url, args.rows)
            written = time.perf_counter() - started
            cases = {
                "hand-written SQL through psycopg (baseline for --connect)": (HAND_BODY.format(url=url, query=HAND_POSTGRES.format(floor=FLOOR)), ROOT),
                "memlens monitor --connect postgresql": (CONNECT_BODY.format(url=url, floor=str(FLOOR)), ROOT),
                "today's memlens monitor DIR (baseline for the files)": (MONITOR_BODY.format(folder=str(folder), floor=str(FLOOR)), baseline),
                "memlens monitor DIR (this checkout)": (MONITOR_BODY.format(folder=str(folder), floor=str(FLOOR)), ROOT),
            }
            results: dict[str, list[dict]] = {name: [] for name in cases}
            for _ in range(args.repeat):  # interleaved, so every case sees the same machine load
                for name, (body, root) in cases.items():
                    results[name].append(run_child(body, root))
    finally:
        server.stop()
        subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, check=False, capture_output=True)
    problems = []
    first = next(iter(results.values()))[0]["windows"]
    for name, runs in results.items():
        if runs[0]["windows"] != first:
            problems.append(f"{name}: the windows differ from the hand-written query's: {runs[0]['windows'][:2]} vs {first[:2]}")
    names = list(cases)
    seconds = {name: median(r["seconds"] for r in runs) for name, runs in results.items()}
    versus = {names[0]: names[0], names[1]: names[0], names[2]: names[2], names[3]: names[2]}
    body = table(
        ["run", "rows", "windows", "median s", "vs its baseline", "median CPU s (this process)", "peak memory MiB (this process)"],
        [
            [
                name,
                f"{rows:,}",
                len(runs[0]["windows"]),
                seconds[name],
                f"{seconds[name] / seconds[versus[name]]:.2f}x",
                median(r["cpu_seconds"] for r in runs),
                max(r["peak_mib"] for r in runs),
            ]
            for name, runs in results.items()
        ],
    )
    connect_peak = max(r["peak_mib"] for r in results[names[1]])
    if connect_peak >= 300:
        problems.append(f"--connect peak memory {connect_peak:.0f} MiB, over 300")
    body += (
        f"\n\n{rows:,} rows ({rows // K:,} turns at k={K}, 2% empty turns, {DAYS} days), written once as daily Parquet files"
        f" and COPied into PostgreSQL 15 on loopback (default settings) in {written:.1f} s. Each run a fresh process, median"
        f" of {args.repeat}, interleaved; all four agree on every window's turns, rows and no-memory count. The two"
        " PostgreSQL runs spend most of their time in the server: the CPU column is the client process only."
        f" Today's monitor is {args.baseline_ref} at {commit}."
    )
    report(f"memlens monitor --connect vs hand-written SQL, {rows:,} rows (benchmarks/monitor_connect.py)", body)
    return exit_code(problems)


if __name__ == "__main__":
    sys.exit(main())
