"""`memlens misses RUN_ID`: where each relevant memory of a saved run was lost.

    memlens misses RUN_ID                      counts per cause, overall and per tag
    memlens misses RUN_ID --floor 0.3          at this floor (default MEMORY_SCORE_FLOOR, else 0.35)
    memlens misses RUN_ID --floor-config FILE  under the floor file's rule that reads the whole
                                               turn (or its floor), as the agent side decides
    memlens misses RUN_ID --format json        one object: counts, by_tag, unknown, notes
    memlens misses RUN_ID --pairs pairs.csv    also one row per (question, relevant memory)
                                               pair: CSV for a .csv name, else JSONL
    memlens misses RUN_ID --depth 200          how deep the deeper query asks (default 100,
                                               capped at the store's limit; 0: never)

Each pair's cause is one of not_stored, past_k, under_floor, kept
(dashboard/evaluation/misses.py); under a floor file's rule, under_floor is a pair
in the top k the rule dropped. The store is opened with the run's own settings
and clock (secrets from the environment), looked up by id for the pairs the run
did not return, and asked again, deeper, only for the questions that have one.
The exports hold ids, ranks and scores, never text.

Exit status: 0, or 2 when the run, its judged set or its store cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from dashboard.cli.arguments import non_negative
from dashboard.cli.errors import CommandError, note
from dashboard.cli.store_options import open_configured


def _floor(text: str) -> float:
    value = non_negative(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r} is outside [0, 1]: a floor is a score from 0 to 1")
    return value


def _depth(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def _progress(done: int, total: int) -> None:
    print(f"\rdeeper queries {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("misses", help="where each relevant memory of a run was lost: not stored, past k, under the floor")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--floor", type=_floor, default=None,
                        help="the score floor (default MEMORY_SCORE_FLOOR, else 0.35)")
    parser.add_argument("--floor-config", metavar="FILE", default=None,
                        help="count under this floor file's rule that reads the whole turn (or its floor), "
                        "as the agent side applies it; not with --floor")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--pairs", metavar="FILE", default=None,
                        help="also write one row per (question, relevant memory) pair: CSV for a .csv name, else JSONL")
    parser.add_argument("--depth", type=_depth, default=None,
                        help="how many memories the deeper query asks for, for the rank of a pair past k "
                        "(default 100, capped at the store's limit; 0: no deeper query)")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from connectors.base import ConnectorError
    from dashboard.database import open_app_database
    from dashboard.evaluation import misses
    from dashboard.floor import default_floor

    rule = None
    if args.floor_config is not None:  # read first: a bad file is said before any store is asked
        from dashboard.floor_config import FloorConfig

        if args.floor is not None:
            raise CommandError("give --floor or --floor-config, not both: the floor file holds its own floor")
        config = FloorConfig.load(args.floor_config)  # a FloorConfigError is one line and exit 2 (main.py)
        args.floor, rule = config.floor, config.rule
    db = open_app_database(dict(os.environ))
    info = db.runs.get(args.run_id)
    if info is None:
        raise CommandError(f"no run {args.run_id!r}")
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    if judged is None:
        raise CommandError(f"run {info.run_id}'s judged set {info.set_name!r} ({info.set_hash}) is gone")
    floor = default_floor() if args.floor is None else args.floor
    depth = misses.DEFAULT_DEPTH if args.depth is None else args.depth
    try:
        store = open_configured(info.store, info.settings)
    except ConnectorError as exc:
        raise CommandError(f"cannot open the run's store ({info.store}): {exc}") from exc
    try:
        anatomy = misses.locate(store, info, judged.questions, db.runs.outcomes(info.run_id), depth=depth,
                                progress=_progress)
    finally:
        store.close()
    if args.pairs:
        path = Path(args.pairs)
        text = (misses.csv_text(anatomy, floor, rule) if path.suffix.lower() == ".csv"
                else "".join(line + "\n" for line in misses.jsonl_lines(anatomy, floor, rule)))
        try:
            path.write_text(text, encoding="utf-8", newline="")
        except OSError as exc:
            raise CommandError(f"--pairs {args.pairs}: {exc.strerror or exc}") from exc
    if args.format == "json":
        print(json.dumps(anatomy.summary(floor, rule)))
    else:
        print(f"run {info.run_id} {info.status}: k {info.k}, floor {floor!r}"
              + (f", {rule.describe()}" if rule is not None else "")
              + (f", as of {info.as_of}" if info.as_of else ""), file=sys.stderr)
        print("\n".join(misses.table_lines(anatomy, floor, rule)))
    for said in anatomy.notes:
        note(said)
    if anatomy.skipped_questions:
        note(f"{anatomy.skipped_questions} question(s) failed or were not asked in the run: "
             f"their pairs are left out (`memlens runs resume {info.run_id}` asks them)")
    return 0
