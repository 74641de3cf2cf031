"""`memlens calibrate FILE`: the floor trade-off of a label file, in the terminal.

    memlens calibrate labels.jsonl [--floors 0.15,0.2,...] [--cost-ratio R] [--format table|csv|json]

table (default): one line per requested floor,
    floor 0.20: keeps N irrelevant, drops M relevant, precision P, recall R, no memory in S of turns
then the separating band (when one exists) and the recommended floor.
csv: the full sweep (every distinct score plus the requested floors).
json: the requested floors, the band, the recommendation and the label counts.

Problems in the file go to stderr with their line numbers; the usable rows are used.
Exit status 2 when nothing usable is left (no rows, one class only, unreadable file).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from dashboard.calibration.label_files import LabelFileError, read_label_file
from dashboard.calibration.report import as_json, table_lines
from dashboard.calibration.sweep import DEFAULT_SEED, CalibrationError, calibrate

DEFAULT_FLOORS = (0.15, 0.20, 0.25, 0.30, 0.35, 0.40)
EXIT_UNUSABLE = 2


def parse_floors(text: str) -> list[float]:
    floors = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{part!r} is not a finite number")
        floors.append(value)
    if not floors:
        raise argparse.ArgumentTypeError("give at least one floor, e.g. 0.2,0.3")
    return floors


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number above 0")
    return value


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "calibrate",
        help="choose a score floor from a label file",
        description="For each floor: the irrelevant memories it keeps and the relevant ones it drops. "
        "FILE is JSONL or CSV in the label export format, or any file with score and label.",
    )
    parser.add_argument("file", metavar="FILE", help="label file (JSONL or CSV)")
    parser.add_argument(
        "--floors",
        type=parse_floors,
        default=list(DEFAULT_FLOORS),
        help="comma-separated floors to report (default 0.15,0.20,0.25,0.30,0.35,0.40)",
    )
    parser.add_argument(
        "--cost-ratio",
        type=positive_number,
        default=1.0,
        help="how many missed relevant memories one wrong memory costs (default 1)",
    )
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument(
        "--resamples", type=int, default=None, help="bootstrap resamples (default 1000; fewer past 20,000 rows; 0: none)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default 0)")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        labels = read_label_file(args.file)
    except LabelFileError as exc:
        print(f"memlens calibrate: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    if labels.issues:
        print(labels.issue_report(), file=sys.stderr)
        print(f"{labels.summary()}; calibrating on the usable rows.", file=sys.stderr)
    try:
        result = calibrate(
            labels.labelled_scores(),
            args.floors,
            args.cost_ratio,
            resamples=None if args.resamples is None else max(0, args.resamples),
            seed=args.seed,
        )
    except CalibrationError as exc:
        print(f"memlens calibrate: {args.file}: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    if args.format == "csv":
        sys.stdout.write(result.sweep.to_frame().to_csv(index=False))
    elif args.format == "json":
        print(json.dumps(as_json(result, labels), indent=2))
    else:
        print("\n".join(table_lines(result, labels)))
    return 0
