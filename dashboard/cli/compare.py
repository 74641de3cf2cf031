"""`memlens compare RUN_A RUN_B`: two runs of one judged set, and the CI regression gate.

    memlens compare RUN_A RUN_B [--metric recall@10] [--fail-if-worse DELTA]

Prints both means, the delta, wins / ties / losses for B, the p-value of a paired
randomisation test and the questions B lost most on. With --fail-if-worse, exit
status 1 when B is worse than A on the metric by more than DELTA with p < 0.05
(the regression and its worst questions are named on stderr); 0 otherwise.
Exit status 2 when the runs cannot be compared, and, with --fail-if-worse, when
either run has failed questions: a store outage is not a regression (resume the
run, or pass --allow-failures to gate on it anyway, failed questions counting as
empty answers).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cli.arguments import finite, non_negative
from dashboard.cli.errors import CommandError

EXIT_REGRESSED = 1


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("compare", help="compare two runs of one judged set (a CI regression gate)")
    parser.add_argument("run_a", metavar="RUN_A", help="the baseline run's id")
    parser.add_argument("run_b", metavar="RUN_B", help="the candidate run's id")
    parser.add_argument("--metric", default=None, help="metric to compare (default recall@K at the runs' k)")
    parser.add_argument("--floor", type=finite, default=None, help="score floor for the floor_* metrics")
    parser.add_argument(
        "--fail-if-worse", type=non_negative, default=None, metavar="DELTA",
        help="exit 1 when B is worse than A by more than DELTA with p < 0.05",
    )
    parser.add_argument(
        "--allow-failures", action="store_true",
        help="with --fail-if-worse, gate on runs with failed questions too (they count as empty answers)",
    )
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from dashboard.database import open_app_database
    from dashboard.evaluation.run_compare import CompareError, compare_runs, summary_lines

    db = open_app_database(dict(os.environ))
    infos = []
    for run_id in (args.run_a, args.run_b):
        info = db.runs.get(run_id)
        if info is None:
            raise CommandError(f"no run {run_id!r} (see `memlens runs list`)")
        if not info.complete:
            print(f"warning: run {run_id} is {info.status}", file=sys.stderr)
        infos.append(info)
    run_a, run_b = infos
    failing = [info for info in infos if info.failed]
    if args.fail_if_worse is not None and failing and not args.allow_failures:
        from dashboard.evaluation.runs import failure_summary

        said = [
            f"run {info.run_id}: {failure_summary(info, (o.error for o in db.runs.outcomes(info.run_id)))};"
            f" a store failure is not a regression: `memlens runs resume {info.run_id}` asks them again,"
            " or pass --allow-failures to compare anyway"
            for info in failing
        ]
        for line in said[:-1]:
            print(f"memlens compare: {line}", file=sys.stderr)
        raise CommandError(said[-1])  # the last line, as every failure is said
    judged = db.judged_sets.load(run_a.set_name, run_a.set_hash)
    metric = args.metric or f"recall@{min(run_a.k, run_b.k)}"
    if judged is None:
        raise CompareError(f"run {run_a.run_id}'s judged set {run_a.set_name} ({run_a.set_hash}) is gone")
    comparison = compare_runs(
        run_a, db.runs.outcomes(run_a.run_id), run_b, db.runs.outcomes(run_b.run_id), judged, metric, floor=args.floor
    )
    print("\n".join(summary_lines(comparison)))
    if args.fail_if_worse is not None and comparison.regressed(args.fail_if_worse):
        worst = ", ".join(d.message_id for d in comparison.worst(5))
        print(
            f"memlens compare: REGRESSION: {metric} fell by {-comparison.mean_delta:.4f} "
            f"(more than {args.fail_if_worse:g}, p = {comparison.p_value:.4f}); worst questions: {worst}",
            file=sys.stderr,
        )
        return EXIT_REGRESSED
    return 0
