"""What `memlens eval` and `memlens runs resume` share about a run: the
--allow-failures flag, the progress line, and the report of a saved run (its figures
on stdout, table or JSON; the failed questions on stderr) with the exit status it
gives: 0 when the run completed, 1 (EXIT_STOPPED) when it stopped early or some
questions failed, unless --allow-failures and every question was asked."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_STOPPED = 1


def add_allow_failures(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-failures", action="store_true",
        help="exit 0 when every question was asked even if the store failed some (they count as empty answers)",
    )


def print_progress(done: int, total: int) -> None:
    print(f"\rquestions {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def report(db: Any, run_id: str, fmt: str, floor: float | None, trec_run: str | None, *,
           allow_failures: bool = False, command: str = "memlens eval") -> int:
    from dashboard.evaluation.export import trec_lines
    from dashboard.evaluation.run_figures import run_figures, table_lines
    from dashboard.evaluation.runs import failure_kinds, failure_summary

    info = db.runs.get(run_id)
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    outcomes = db.runs.outcomes(run_id)
    figures = run_figures(judged.questions, outcomes, info.k, floor)
    if trec_run:
        Path(trec_run).write_text("".join(line + "\n" for line in trec_lines(info, outcomes)), encoding="utf-8")
    if fmt == "json":
        body = {"run_id": run_id, "complete": info.complete, "metrics": figures.overall}
        if not info.complete:
            body["progress"] = {"done": info.answered, "total": info.total}
        if info.failed:
            body["failed"] = info.failed
            body["failures"] = failure_kinds(o.error for o in outcomes)
        print(json.dumps(body))
    else:
        print(f"run {run_id} {info.status}", file=sys.stderr)
        print("\n".join(table_lines(figures)))
    if info.failed:
        print(
            f"{command}: {failure_summary(info, (o.error for o in outcomes))}; they count as returning nothing in these figures;"
            f" `memlens runs resume {run_id}` asks them again",
            file=sys.stderr,
        )
    if info.complete or (allow_failures and info.finished):
        return 0
    return EXIT_STOPPED
