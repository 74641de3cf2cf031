"""`memlens calibrate FILE`: the floor trade-off of a label file, in the terminal.

    memlens calibrate labels.jsonl [--floors 0.15,0.2,...] [--cost-ratio R] [--format table|csv|json]
        [--target-recall R] [--target-precision P] [--fbeta B] [--segment-by user|store|tag]
        [--floor-config-out FILE] [--rule learned|largest-gap|top-ratio [--top-ratio SHARE]]

table (default): one line per requested floor,
    floor 0.20: keeps N irrelevant, drops M relevant, precision P, recall R, no memory in S of turns
then the separating band (when one exists), the recommended floor at the cost ratio,
one line per mode asked for,
    target recall 0.90: floor 0.31 keeps 1234 irrelevant, drops 89 relevant, precision 0.07
    target precision 0.80: no floor reaches it (best 0.41 at floor 0.62)
    max F1: floor 0.44 keeps 120 irrelevant, drops 300 relevant, precision 0.71, recall 0.66
and the MEMORY_SCORE_FLOOR= line, which follows the target recall when given, else the
target precision, else F-beta, else the cost ratio (at the default cost ratio, a floor
dropping more than half the relevant memories gives way to target recall 0.90, and a
line above it says why). Then the diagnosis
when the labels do not separate (ROC AUC, average precision), the no-memory shares of
answerable and unanswerable turns, the floors per segment, and `warning:` lines.
csv: the full sweep (every distinct score plus the requested floors), with the
no-memory share of answerable and unanswerable turns.
json: the requested floors, the band, the recommendation, the label counts, and the
advice (mode, target, floor, each mode's choice, diagnosis, warnings) and segments.

--floor-config-out FILE writes the floor file the Calibrate page's download gives
(calibration.report.floor_file: the floor of the MEMORY_SCORE_FLOOR= line at full
precision, the score space of the labels' store where its kind says it, the floors
per segment of --segment-by, the label dates), which `FloorConfig.load` and
`memlens monitor --floor-config` read, and prints its path (to stderr for csv and
json, whose stdout is data). A file that cannot be written is one line and exit 2.

--rule learned|largest-gap|top-ratio also compares, held out (cross-validation split
by turn), the single floor, the learned rule and the two label-free cuts at the
target of the MEMORY_SCORE_FLOOR= line (target recall, target precision or cost
ratio), prints the figures with their intervals over turns and the recommended
rule (calibration/turn_fit.py), and writes the asked rule into --floor-config-out's
file. Without --rule the output is as it always was.

Problems in the file go to stderr with their line numbers; the usable rows are used.
Exit status 2 when nothing usable is left (no rows, one class only, unreadable file).

    memlens calibrate --labels URL [--session NAME] [the options above]

reads the label database instead of a file (a SQLite path or a PostgreSQL URL; with
--session, that session's labels), one label per pair by the same rule as the
Calibrate page and every export (dashboard/labels/resolution.py): the figures,
and the interval, equal the page's on the same labels. The rule and what it left
out are printed first (to stderr for csv, under "resolution" in json).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dashboard.calibration.advice import advice_lines, advise, json_safe
from dashboard.calibration.choice import COST_RATIO, FBETA, TARGET_PRECISION, TARGET_RECALL
from dashboard.calibration.label_files import LabelFile, from_labels, read_label_file
from dashboard.calibration.report import as_json, floor_file, labels_score_space, table_lines
from dashboard.calibration.segments import SEGMENT_FIELDS, segment_fields, segment_floors, segments_for_export
from dashboard.calibration.sweep import DEFAULT_SEED, CalibrationError, calibrate
from dashboard.calibration.turn_fit import DEFAULT_TOP_RATIO, RULE_NAMES, RULES, compare_rules, rule_section, turn_labels
from dashboard.cli.arguments import parse_floors, positive_number, share
from dashboard.cli.errors import CommandError

DEFAULT_FLOORS = (0.15, 0.20, 0.25, 0.30, 0.35, 0.40)


SEGMENT_COLUMN_NAMES = {"user": "user_id (or user) column", "store": "store column", "tag": "tag (or category) column"}


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "calibrate",
        help="choose a score floor from a label file",
        description="For each floor: the irrelevant memories it keeps and the relevant ones it drops. "
        "FILE is JSONL or CSV in the label export format, or any file with score and label.",
    )
    parser.add_argument("file", metavar="FILE", nargs="?", help="label file (JSONL or CSV); or --labels")
    parser.add_argument(
        "--labels",
        metavar="URL",
        default=None,
        help="calibrate on the label database instead of a file: a SQLite file or a PostgreSQL URL",
    )
    parser.add_argument("--session", metavar="NAME", default=None, help="with --labels: only this labelling session's labels")
    parser.add_argument(
        "--floors",
        type=parse_floors,
        default=list(DEFAULT_FLOORS),
        help="comma-separated floors to report (default 0.15,0.20,0.25,0.30,0.35,0.40)",
    )
    parser.add_argument(
        "--cost-ratio",
        type=positive_number,
        default=None,
        help="how many missed relevant memories one wrong memory costs (default 1; at the default, a floor that "
        "drops more than half the relevant memories is not the MEMORY_SCORE_FLOOR= line: target recall 0.90 is)",
    )
    parser.add_argument(
        "--target-recall",
        type=share,
        metavar="SHARE",
        help="also the highest floor keeping at least this share of relevant memories. The MEMORY_SCORE_FLOOR= "
        "line follows the target recall when given, else the target precision, else F-beta, else the cost ratio",
    )
    parser.add_argument(
        "--target-precision",
        type=share,
        metavar="SHARE",
        help="also the lowest floor at which at least this share of what is kept is relevant",
    )
    parser.add_argument("--fbeta", type=positive_number, metavar="BETA", help="also the floor maximising F-beta (1: F1)")
    parser.add_argument(
        "--segment-by", choices=SEGMENT_FIELDS, help="also a floor per user, store or tag, with its bootstrap interval"
    )
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument(
        "--floor-config-out",
        metavar="FILE",
        help="also write the floor file (the JSON the Calibrate page downloads: the MEMORY_SCORE_FLOOR= floor, score "
        "space, floors per --segment-by, label dates) that FloorConfig.load and `memlens monitor --floor-config` read",
    )
    parser.add_argument(
        "--rule",
        choices=RULES,
        default=None,
        help="also compare a rule that reads the whole turn (learned: logistic over the turn's features; largest-gap: "
        "Adaptive-k with the floor; top-ratio: a share of the turn's top score with the floor) against the single "
        "floor, held out by turn, and write it into --floor-config-out's file",
    )
    parser.add_argument(
        "--top-ratio",
        type=share,
        metavar="SHARE",
        default=DEFAULT_TOP_RATIO,
        help=f"with --rule: the share of the turn's top score the top-ratio cut keeps (default {DEFAULT_TOP_RATIO})",
    )
    parser.add_argument(
        "--resamples", type=int, default=None, help="bootstrap resamples (default 1000; fewer past 20,000 rows; 0: none)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default 0)")
    parser.add_argument(
        "--score-direction", choices=("higher", "lower"), default=None,
        help="say which scores are better when the file's look like a raw distance (rising with rank, outside "
        "0-1): higher calibrates them as they are; lower is refused with how to convert them",
    )
    parser.set_defaults(handler=run)
    return parser


def direction_refusal(labels: Any, direction: str | None) -> str | None:
    """Why calibration on these scores is refused (they look like a raw distance and
    the direction was not given, or was given as lower), or None. With ``higher`` the
    warning goes to stderr and calibration goes on."""
    from dashboard.score_direction import CONVERSION, check_direction

    rows = labels.rows
    check = check_direction([r.score for r in rows], [r.message_id for r in rows], [r.rank for r in rows])
    warning = check.warning()
    if warning is None:
        return None
    if direction == "higher":
        print(f"warning: {warning} Calibrated as given (--score-direction higher).", file=sys.stderr)
        return None
    if direction == "lower":
        return (
            f"{warning} A floor keeps the hits scoring at or above it, so scores where lower is better cannot "
            f"be calibrated as they are: convert them to memlens's score first ({CONVERSION})."
        )
    return f"{warning} Calibration refused: if higher is better in this file, say so with --score-direction higher."


def _from_database(args: argparse.Namespace) -> tuple[LabelFile, list[str]]:
    """The label database's labels as the Calibrate page counts them, and the lines
    saying by which rule (LabelStoreError and NoSuchSession propagate)."""
    import os

    from dashboard.database import AppDatabase
    from dashboard.labels.counted import counted

    db = AppDatabase(args.labels)
    try:
        found = counted(db, session=args.session, environ=dict(os.environ))
    finally:
        db.close()
    name = f"label store, session {args.session}" if args.session else "label store"
    return from_labels(found.labels, source=name), found.lines()


def run(args: argparse.Namespace) -> int:
    resolution: list[str] = []
    if (args.file is None) == (args.labels is None):
        raise CommandError("give a label FILE or --labels URL (one of the two)")
    if args.session and args.labels is None:
        raise CommandError("--session needs --labels URL")
    if args.labels is not None:
        labels, resolution = _from_database(args)
    else:
        labels = read_label_file(args.file)
    if labels.issues:
        print(labels.issue_report(), file=sys.stderr)
        print(f"{labels.summary()}; calibrating on the usable rows.", file=sys.stderr)
    refused = direction_refusal(labels, args.score_direction)
    if refused:
        raise CommandError(f"{args.file}: {refused}")
    try:
        result = calibrate(
            labels.labelled_scores(),
            args.floors,
            1.0 if args.cost_ratio is None else args.cost_ratio,
            resamples=None if args.resamples is None else max(0, args.resamples),
            seed=args.seed,
        )
        targets = {
            mode: value
            for mode, value in ((TARGET_RECALL, args.target_recall), (TARGET_PRECISION, args.target_precision), (FBETA, args.fbeta))
            if value is not None
        }
        mode = next(iter(targets), COST_RATIO)  # the exported floor: target recall, precision, F-beta, cost ratio
        resamples = None if args.resamples is None else max(0, args.resamples)
        advice = advise(result, targets, mode, resamples=resamples, seed=args.seed, guard_recall=args.cost_ratio is None)
        segments, segment_warnings = [], []
        if args.segment_by and args.segment_by not in segment_fields(labels):
            segment_warnings.append(
                f"no floors per {args.segment_by}: the labels carry no {SEGMENT_COLUMN_NAMES[args.segment_by]} "
                "with two values or more"
            )
        elif args.segment_by:
            segments = segment_floors(labels, args.segment_by, advice.mode, advice.target, resamples=resamples, seed=args.seed)
            segment_warnings = [f"{segment.title(args.segment_by)}: {segment.note}" for segment in segments if segment.note]
        comparison = _compare(args, labels, advice, resamples) if args.rule else None
    except CalibrationError as exc:
        raise CommandError(f"{labels.source}: {exc}") from exc
    if resolution and args.format != "json":
        print("\n".join(resolution), file=sys.stderr if args.format == "csv" else sys.stdout)
    if args.format == "csv":
        sys.stdout.write(advice.sweep_frame().to_csv(index=False))
    elif args.format == "json":
        report = as_json(result, labels)
        report["advice"] = advice.as_dict()
        if resolution:
            report["resolution"] = resolution
        if comparison is not None:
            report["rule"] = comparison.as_dict()
        report["segments"] = (
            {
                "by": args.segment_by,
                "mode": mode,
                "floors": [segment.as_dict() for segment in segments],
                "warnings": segment_warnings,
            }
            if args.segment_by
            else None
        )
        print(json.dumps(json_safe(report), indent=2))
    else:
        segment_lines = [segment.line(args.segment_by) for segment in segments]
        print("\n".join(advice_lines(table_lines(result, labels), advice, segment_lines, segment_warnings)))
    if comparison is not None:
        lines = [] if args.format == "json" else comparison.lines()
        if comparison.recommended != args.rule:
            lines.append(
                f"warning: --rule {args.rule} is {'written' if args.floor_config_out else 'shown'} as asked, but on these "
                f"labels the held-out comparison recommends the {RULE_NAMES[comparison.recommended]}"
            )
        if lines:
            print("\n".join(lines), file=sys.stderr if args.format != "table" else sys.stdout)
    if args.floor_config_out:
        _write_floor_file(
            args, result, labels, advice, segments_for_export(args.segment_by, segments) if segments else {}, comparison
        )
    return 0


def _compare(args: argparse.Namespace, labels: LabelFile, advice: Any, resamples: int | None) -> Any:
    """The held-out comparison of the rules at the exported floor's target."""
    if advice.mode == FBETA:
        raise CommandError("--rule is chosen by --target-recall, --target-precision or --cost-ratio, not --fbeta alone")
    return compare_rules(
        turn_labels(labels, args.top_ratio), advice.mode, advice.target, resamples=resamples, seed=args.seed
    )


def _write_floor_file(
    args: argparse.Namespace, result: Any, labels: LabelFile, advice: Any, segments: dict, comparison: Any = None
) -> None:
    """The floor file at --floor-config-out, as the page's download builds it (with
    --rule, the rule and the floor beside it); its path printed (to stderr when
    stdout is csv or json data)."""
    rule, rule_floor = rule_section(comparison, args.rule) if comparison is not None else (None, None)
    document = floor_file(
        result, labels, advice=advice, segments=segments, filters={"session": args.session} if args.session else None,
        score_space=labels_score_space(labels.stores()), rule=rule, rule_floor=rule_floor,
    )  # fmt: skip
    try:
        with open(args.floor_config_out, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(document, indent=2) + "\n")
    except OSError as exc:
        raise CommandError(f"--floor-config-out {args.floor_config_out}: cannot write the file ({exc.strerror or exc})") from exc
    print(f"floor config written to {args.floor_config_out}", file=sys.stderr if args.format != "table" else sys.stdout)
