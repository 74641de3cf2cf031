"""`memlens monitor` over a month of production logs: `python -m benchmarks.monitor [--rows N]`.

Writes N rows (default 10,000,000: 2,000,000 turns at k=5) as 30 daily Parquet files in
a temporary directory (dashboard/monitoring/synthetic.py, seeded), then, in one run:

    memlens monitor       `memlens monitor DIR --floor 0.35 --window 1d --format json` in a
                          process of its own: reading with every row checked, merging
                          repeated pairs, the per-window figures, the baseline and both
                          alert tests
    hand-written DuckDB   one SQL query over the same files computing the same per-window
                          figures (turns, rows, no-memory share, kept per turn, top-1
                          p10/p50/p90, near-floor share), repeats merged, no row checks,
                          no tests: what an engineer would write by hand

Each runs `--repeat` times in a fresh process (median wall time, peak resident memory of
the process from VmHWM). The two must agree on every window's turns, rows and no-memory
count, or the script exits non-zero. Appends the table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks._common import ROOT, exit_code, median, report, table
from dashboard.monitoring.synthetic import FLOOR, START, synthetic_log

DAYS = 30
K = 5

HAND_QUERY = """
WITH pairs AS (
    SELECT message_id, memory_id, min(score) AS score, min(timestamp) AS ts
    FROM read_parquet('{folder}/*.parquet')
    GROUP BY message_id, memory_id
), turns AS (
    SELECT message_id, min(ts) AS ts, max(score) AS top1, count(memory_id) AS rows,
           count(*) FILTER (WHERE score >= {floor}) AS kept
    FROM pairs GROUP BY message_id
)
SELECT CAST(time_bucket(INTERVAL '1 day', ts) AS DATE) AS day, count(*) AS turns, sum(rows) AS rows,
       count(*) FILTER (WHERE top1 IS NULL OR top1 < {floor}) AS no_memory, avg(kept) AS kept_per_turn,
       quantile_cont(top1, [0.1, 0.5, 0.9]) AS top1, count(*) FILTER (WHERE abs(top1 - {floor}) <= 0.02) / count(top1) AS near
FROM turns GROUP BY 1 ORDER BY 1
"""

# each measured command runs in a process of its own and prints its peak memory last
CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
started, cpu_started = time.perf_counter(), cpu()
{body}
elapsed, cpu_seconds = time.perf_counter() - started, cpu() - cpu_started
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
print(json.dumps({{"seconds": elapsed, "cpu_seconds": cpu_seconds, "peak_mib": peak, "windows": windows}}))
"""

MONITOR_BODY = """
import contextlib, io
from dashboard.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["monitor", {folder!r}, "--floor", {floor!r}, "--window", "1d", "--format", "json"])
windows = [[w["window"], w["turns"], w["rows"], w["no_memory_turns"]] for w in json.loads(out.getvalue())["windows"]]
"""

HAND_BODY = """
import duckdb
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
con.execute("SET enable_progress_bar = false")
rows = con.execute({query!r}).fetchall()
windows = [[str(r[0]), int(r[1]), int(r[2]), int(r[3])] for r in rows]
"""


def write_month(folder: Path, rows: int) -> int:
    """30 daily Parquet files, one day generated at a time (bounded memory)."""
    turns_per_day = rows // K // DAYS
    for day in range(DAYS):
        part = synthetic_log(1, turns_per_day, seed=day, k=K, empty_share=0.02, start=START + timedelta(days=day), first_turn=day * turns_per_day)
        pq.write_table(part, folder / f"{(START + timedelta(days=day)):%Y-%m-%d}.parquet")
    return sum(pq.ParquetFile(path).metadata.num_rows for path in folder.glob("*.parquet"))


def run_child(body: str) -> dict:
    script = CHILD.format(root=str(ROOT), body=body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.monitor")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="memlens-bench-monitor-") as directory:
        folder = Path(directory)
        started = time.perf_counter()
        rows = write_month(folder, args.rows)
        written = time.perf_counter() - started
        cases = {
            "hand-written DuckDB query (the baseline)": HAND_BODY.format(query=HAND_QUERY.format(folder=folder, floor=FLOOR)),
            "memlens monitor --window 1d --format json": MONITOR_BODY.format(folder=str(folder), floor=str(FLOOR)),
        }
        results: dict[str, list[dict]] = {name: [] for name in cases}
        for _ in range(args.repeat):  # interleaved, so both see the same machine load
            for name, body in cases.items():
                results[name].append(run_child(body))
    problems = []
    hand, ours = (results[name][0]["windows"] for name in cases)
    if hand != ours:
        problems.append(f"the windows differ: hand {hand[:2]}..., memlens {ours[:2]}...")
    base = median(r["seconds"] for r in results[next(iter(cases))])
    # CPU seconds (user + system, every thread) as well: on a machine shared with other
    # work the wall time says as much about the others as about the two runs
    base_cpu = median(r["cpu_seconds"] for r in results[next(iter(cases))])
    body = table(
        ["run", "rows", "windows", "median s", "rows/s", "time / hand-written query", "median CPU s", "CPU / hand-written", "peak memory MiB"],
        [
            [name, f"{rows:,}", len(runs[0]["windows"]), median(r["seconds"] for r in runs), f"{rows / median(r['seconds'] for r in runs):,.0f}",
             f"{median(r['seconds'] for r in runs) / base:.2f}x", median(r["cpu_seconds"] for r in runs),
             f"{median(r['cpu_seconds'] for r in runs) / base_cpu:.2f}x", max(r["peak_mib"] for r in runs)]
            for name, runs in results.items()
        ],
    )
    body += (
        f"\n\n{rows:,} rows in {DAYS} daily Parquet files ({rows // K:,} turns at k={K}, 2% empty turns), written in"
        f" {written:.1f} s; each run a fresh process, median of {args.repeat}, interleaved. Both agree on every window's"
        " turns, rows and no-memory count. memlens also checks every row (the rules of `memlens logs check`) and runs"
        " the baseline and both alert tests; the hand-written query does neither."
    )
    report(f"memlens monitor, {rows:,} rows (benchmarks/monitor.py)", body)
    return exit_code(problems)


if __name__ == "__main__":
    sys.exit(main())
