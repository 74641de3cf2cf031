"""`memlens misses` on a 2,000-question run of the embedded store, against reading the
run (`memlens runs export`) in the same rounds.

The data: benchmarks/_eval_data.py's generated set (2,000 questions over 6,000
memories in 10 users, seeded), imported once into an embedded store file, and one
`memlens eval --k 10` run of it, made once before the rounds.

Each contender is a process of its own, timed from its start to its exit (Python
start, imports, the label database read, the output), in rounds (interleaved, the
order rotated each round; the median round is reported):

- baseline: ``memlens runs export RUN --format jsonl`` (reading the run);
- misses, no deeper query: ``memlens misses RUN --depth 0 --format json``: the
  run and its judged set read, every pair the run did not return looked up by id
  in the store file, the causes counted;
- misses: ``memlens misses RUN --format json`` (deeper queries, 100 deep, for the
  questions with a stored pair past k: the model loads and encodes those questions).

Target (issue 38): misses at most 1.2x the baseline, plus the deeper queries it asks
for (the third row minus the second).
Run: ``python -m benchmarks.misses [--rounds R]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import _eval_data
from benchmarks._common import PYTHON, ROOT, median, report, table

K = 10


def memlens(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([PYTHON, "-m", "dashboard.cli.main", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=3600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"memlens {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlens-misses-") as name:
        directory = Path(name)
        memories, judged = _eval_data.write(directory)
        env = {**os.environ, "MEMLENS_DATA_DIR": str(directory / "data"), "PYTHONPATH": str(ROOT)}
        env.pop("MEMLENS_LABELS_URL", None)
        db = directory / "store.sqlite"
        memlens(["import", str(memories), "--db", str(db)], env)
        _, out = memlens(["eval", str(judged), "--db", str(db), "--k", str(K), "--format", "json"], env)
        run_id = json.loads(out)["run_id"]
        contenders = {
            "baseline: memlens runs export RUN --format jsonl": ["runs", "export", run_id, "--format", "jsonl"],
            "memlens misses RUN --depth 0 --format json": ["misses", run_id, "--depth", "0", "--format", "json"],
            "memlens misses RUN --format json (deeper queries, 100 deep)": ["misses", run_id, "--format", "json"],
        }
        times: dict[str, list[float]] = {label: [] for label in contenders}
        summary: dict = {}
        for round_number in range(options.rounds):
            order = list(contenders)
            shift = round_number % len(order)
            for label in order[shift:] + order[:shift]:
                elapsed, out = memlens(contenders[label], env)
                times[label].append(elapsed)
                if "deeper" in label:
                    summary = json.loads(out)
    seconds = {label: median(values) for label, values in times.items()}
    base = seconds[next(iter(seconds))]
    rows = [[label, f"{s:.2f}", f"{s / base:.2f}x", " / ".join(f"{v:.2f}" for v in times[label])]
            for label, s in seconds.items()]
    labels = list(seconds)
    no_deep, deep = seconds[labels[1]], seconds[labels[2]]
    body = (
        f"2,000 questions (1,800 answerable), 6,000 memories, one run at k={K}; "
        f"{summary['pairs']:,} (question, relevant memory) pairs: "
        + ", ".join(f"{cause} {count:,}" for cause, count in summary["counts"].items())
        + f"; {summary['deep_queries']:,} deeper queries. Median of {options.rounds} rounds, each contender a process.\n\n"
        + table(["contender", "median s", "vs baseline", "rounds (s)"], rows)
        + f"\n\nTarget: misses at most 1.2x reading the run, plus its deeper queries: without them "
        f"{no_deep / base:.2f}x ({'met' if no_deep <= 1.2 * base else 'NOT met'}); the deeper queries add "
        f"{deep - no_deep:.2f} s for {summary['deep_queries']:,} questions."
    )
    report("memlens misses on a 2,000-question embedded run (benchmarks/misses.py)", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
