"""`memlens whatif RUN_ID --metric M`: the Quality page's what-if weights search on a saved run.

    memlens whatif RUN_ID --metric recall --n 3
    memlens whatif RUN_ID --metric mrr --n 5 --grid 0.05 --threshold --format json

Re-scores the candidates the run fetched with every weighting on a grid (steps of
--grid, weights summing to 1; with --threshold, also the page's thresholds 0 to
0.6) and reports the best on a seeded search split and again on the held-out
questions: the same search, the same numbers and the same rules as the page
(dashboard/evaluation/weight_search.py). Weightings under which no candidate can be told
apart are left out; ties follow the stated rule; when nothing beats the store's own
weights on the search split, or the gain on the held-out questions is not above zero
beyond its noise (a 95% bootstrap interval), there is no recommendation and no
--weights hint, and the line says why. Recall, precision and hit rate at n >= the
run's k cannot change by re-ranking: the line says so, and to evaluate deeper first.

table (default): the summary line, `note:` lines (tie rule and counts), one line
per setting tried best first (the store's own first), then either
`recommended: --weights ...` (embedded store) / `recommended: WEIGHTS` or
`recommended: none`. json: one object (see WhatIfResult.as_dict).

Exit status: 0 when the search ran (with or without a recommendation), 2 on
unusable input (no such run, a run without score breakdowns, a bad cutoff).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from dashboard.cli.arguments import positive_int, share
from dashboard.cli.errors import CommandError, note


def add_parser(commands: Any) -> argparse.ArgumentParser:
    from dashboard.evaluation.weight_search import DEFAULT_STEP, METRICS

    parser = commands.add_parser("whatif", help="search other component weights on a saved run's candidates")
    parser.add_argument("run_id", metavar="RUN_ID", help="a saved run (memlens runs list)")
    parser.add_argument("--metric", type=metric_name, required=True, metavar="M",
                        help=f"the metric to maximise: {', '.join(METRICS)}, or with its cutoff as memlens compare "
                        "spells it (recall@10 is --metric recall --n 10)")
    parser.add_argument("--n", type=positive_int, default=None, help="the cutoff the metric is taken at (default 3; at most the run's k)")
    parser.add_argument("--grid", type=share, default=DEFAULT_STEP, metavar="STEP",
                        help=f"the weight grid's step (default {DEFAULT_STEP:g}); it must divide 1, e.g. 0.05, 0.2, 0.25")
    parser.add_argument("--threshold", action="store_true", help="also search a score threshold (as the page's checkbox)")
    parser.add_argument("--top", type=positive_int, default=10, help="settings listed (default 10)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(handler=run)
    return parser


def metric_name(text: str) -> tuple[str, int | None]:
    """--metric: a metric name, or name@n as memlens compare names it."""
    from dashboard.evaluation.weight_search import METRICS

    name, _, depth = text.partition("@")
    if name not in METRICS or (depth and not (depth.isdigit() and int(depth) >= 1)):
        raise argparse.ArgumentTypeError(f"{text!r}: choose one of {', '.join(METRICS)}, optionally with @N (recall@10)")
    return name, int(depth) if depth else None


def _setting_line(name: str, weights: dict[str, float], floor: float | None, train: float, held: float, tied: int) -> str:
    from dashboard.evaluation.weight_search import weights_text

    # "threshold=" is the line's contract; the value is the floor the setting drops hits under.
    at = f" threshold={floor:g}" if floor else ""
    return f"{name}\t{weights_text(weights)}{at}\tsearch {train:.4f}\theld-out {held:.4f}\ttied {tied}"


def run(args: argparse.Namespace) -> int:
    from dashboard.database import open_app_database
    from dashboard.evaluation import weight_search as whatif

    db = open_app_database(dict(os.environ))
    info = db.runs.get(args.run_id)
    if info is None:
        raise CommandError(f"no run {args.run_id!r}")
    metric, depth = args.metric
    if depth is not None and args.n is not None and depth != args.n:
        raise CommandError(f"--metric {metric}@{depth} and --n {args.n} name two cutoffs; give one")
    args.n = depth or args.n or 3
    result = whatif.search_run(db, info, metric=metric, n=args.n, step=args.grid, search_floor=args.threshold)
    result.top = result.top[: args.top]
    apply = whatif.weights_to_apply(result, info.store)
    if args.format == "json":
        body = result.as_dict()
        body["run_id"] = info.run_id
        body["weights_flag"] = f"--weights {apply}" if apply else None
        print(json.dumps(body))
        return 0
    if args.n > info.k:
        note(f"the cutoff {args.n} is past the run's k={info.k}; using n={info.k}")
    print(result.summary())
    for said in result.notes():
        print(f"note: {said}")
    print(_setting_line("own", result.own_weights, None, result.own_train, result.own_held_out, result.own_tied))
    for i, s in enumerate(result.top, start=1):
        print(_setting_line(f"#{i}", s.weights, s.floor, s.train, s.held_out, s.tied))
    recommended = result.recommended
    if recommended is None and result.train_gain <= whatif.MIN_GAIN and not result.order_blind:
        print("recommended: none (nothing beats the store's own weights on the search split)")
    elif recommended is None:
        print(f"recommended: none ({result.why_nothing()})")
    elif apply:
        floor = f" --floor {recommended.floor:g}" if recommended.floor > 0 else ""
        print(f"recommended: memlens eval ... --weights {apply}{floor}")
    else:
        print(f"recommended: {whatif.weights_text(recommended.weights)} (set them in the {info.store} store's own configuration)")
    return 0
