"""Peak memory of `memlens monitor` on a large Parquet log with one bad row, against the
same log clean, in one run: `python -m benchmarks.monitor_memory [--rows N]`.

Writes N identical rows (default 5,000,000; under 100 KB of Parquet, the shape a
compression bomb takes) and a copy whose middle row has a NaN score, runs
`memlens monitor FILE --floor 0.35` on each in its own process, and reports each
process's peak resident memory (``wait4``'s ``ru_maxrss``). The target: the file with
the bad row at most 2x the clean file, and under 1 GiB. The bad row must be named
(file, line, field); a wrong result exits non-zero. Appends the table to
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks._common import exit_code, report


def write(path: Path, rows: int, nan_at: int | None) -> None:
    score = np.full(rows, 0.5)
    if nan_at is not None:
        score[nan_at] = np.nan
    table = pa.table(
        {
            "message_id": pa.array(["m1"] * rows, pa.string()),
            "memory_id": pa.array(["x"] * rows, pa.string()),
            "rank": np.ones(rows, dtype=np.int64),
            "score": score,
            "timestamp": pa.array(["2026-01-01T10:00:00Z"] * rows, pa.string()),
        }
    )
    pq.write_table(table, path)


def peak_of_monitor(path: Path) -> tuple[float, float, str]:
    """(peak RSS in MiB, seconds, stderr) of one `memlens monitor` process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli.main", "monitor", str(path), "--floor", "0.35"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    err = process.stderr.read()
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped above
    return usage.ru_maxrss / 1024, time.perf_counter() - started, err


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.monitor_memory")
    parser.add_argument("--rows", type=int, default=5_000_000)
    args = parser.parse_args(argv)
    problems = []
    with tempfile.TemporaryDirectory(prefix="memlens-bench-monitor-") as directory:
        clean, bad = Path(directory) / "clean.parquet", Path(directory) / "one-bad-row.parquet"
        # written by another process: a child's peak memory counts what its parent held
        # when it was forked, so this one stays small
        for path, nan_at in ((clean, None), (bad, args.rows // 2)):
            subprocess.run(
                [sys.executable, "-c", f"from benchmarks.monitor_memory import write; from pathlib import Path; "
                 f"write(Path({str(path)!r}), {args.rows}, {nan_at})"],
                check=True,
            )  # fmt: skip
        sizes = {clean: clean.stat().st_size, bad: bad.stat().st_size}
        measured = {path: peak_of_monitor(path) for path in (clean, bad)}
    if f"line {args.rows // 2 + 1}, field 'score'" not in measured[bad][2]:
        problems.append("the bad row was not named")
    ratio = measured[bad][0] / measured[clean][0]
    lines = [
        "| file | Parquet size | peak memory | time | / clean |",
        "|---|---|---|---|---|",
        f"| {args.rows:,} rows, clean (baseline) | {sizes[clean] / 1024:,.0f} KB | {measured[clean][0]:,.0f} MiB |"
        f" {measured[clean][1]:.1f} s | 1.00x |",
        f"| {args.rows:,} rows, one NaN score | {sizes[bad] / 1024:,.0f} KB | {measured[bad][0]:,.0f} MiB |"
        f" {measured[bad][1]:.1f} s | {ratio:.2f}x |",
    ]
    body = "\n".join(lines) + (
        "\n\n`memlens monitor FILE --floor 0.35`, one process each, peak resident memory from wait4."
        " The bad row is named (file, line, field) by a streaming pass over the file (dashboard/logs/bad_rows.py)"
        " while DuckDB keeps the good rows; target: at most 2x the clean file and under 1 GiB."
    )
    met = ratio <= 2 and measured[bad][0] < 1024
    body += f" Target {'met' if met else 'NOT met'}."
    report(f"Monitor memory with one bad row, {args.rows:,} rows (benchmarks/monitor_memory.py)", body)
    return exit_code(problems)


if __name__ == "__main__":
    sys.exit(main())
