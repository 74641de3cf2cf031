"""`memlens logs`: check a retrieval log, export the read log as OpenTelemetry traces.

    $ memlens logs check traces.json
    traces.json: imported 40 rows in 8 turns from 41 read; 1 bad row(s) skipped; 0 duplicate row(s) merged
      traces.json: line 3, field 'retrieval.documents.1.document.id': span 5b8aa5a2d2c872e8: the document has no id (not guessed from its text)

    $ memlens logs export --otlp reads-otlp.json
    wrote 12 span(s) from 12 read(s) of /root/.memlens/reads.jsonl to reads-otlp.json

`check` reads any log the Label page reads (JSONL, CSV, Parquet, OTLP JSON traces)
and exits 0 when every row is good, 2 when some rows were skipped, 1 when the file
cannot be read at all. memlens's own files (a run's JSONL, a label export, a memories
file, a judged set, a floor file) are not logs: `check` exits 2 naming what the file
is and where it goes instead, in one line (dashboard/logs/own_files.py). `export` writes the app's read log ($MEMLENS_DATA_DIR/reads.jsonl
unless --read-log names one) as OTLP JSON, ids and scores only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dashboard.cli.errors import CommandError
from dashboard.logs import otlp
from dashboard.logs.read_log import read_log_path, read_records
from dashboard.logs.retrieval_log import LogFormatError, read_log


def add_parser(commands) -> None:
    parser = commands.add_parser("logs", help="check a retrieval log; export the read log as OTLP traces")
    actions = parser.add_subparsers(dest="logs_command", required=True)
    check = actions.add_parser("check", help="read a log the way the Label page does and report what it found")
    check.add_argument("file", help="a JSONL, CSV, Parquet or OTLP JSON trace file")
    check.add_argument("--include-query", action="store_true", help="keep the query text of trace spans")
    check.set_defaults(handler=run_check)
    export = actions.add_parser("export", help="write the app's read log as OTLP JSON spans")
    export.add_argument("--otlp", required=True, metavar="FILE", help="where to write the OTLP JSON lines")
    export.add_argument("--read-log", default=None, help="the read log to export (default: the app's)")
    export.set_defaults(handler=run_export)
    for action, sub in actions.choices.items():
        sub.set_defaults(command_label=f"logs {action}")  # what its errors start with


def run_check(args: argparse.Namespace) -> int:
    from dashboard.logs.own_files import OwnFileError

    try:
        log = read_log(args.file, include_query=args.include_query)
    except OwnFileError:
        raise  # exit 2 naming what the file is and where it goes
    except LogFormatError as exc:  # exit 1: the file cannot be read at all (2 is for skipped rows)
        raise CommandError(str(exc), exit_status=1) from exc
    print(log.summary())
    if said := score_warning(log.rows):
        print(f"warning: {said}")
    for line in log.issue_lines():
        print(f"  {line}")
    for conflict in log.conflicts:
        print(f"  {conflict}")
    return 2 if log.bad_rows else 0


def score_warning(rows) -> str | None:
    """The score-direction check (dashboard/score_direction.py) over a log's rows."""
    from dashboard.score_direction import check_direction

    if not len(rows):
        return None
    return check_direction(rows["score"].to_numpy(), rows["message_id"].to_numpy(), rows["rank"].to_numpy()).warning()


def run_export(args: argparse.Namespace) -> int:
    source = Path(args.read_log) if args.read_log else read_log_path()
    records, broken = read_records(source)
    if not source.exists():
        raise CommandError(f"no read log at {source}", exit_status=1)
    try:
        Path(args.otlp).write_bytes(otlp.to_otlp_jsonl(records))
    except OSError as exc:
        raise CommandError(f"cannot write {args.otlp}: {exc.strerror or exc}", exit_status=1) from exc
    print(f"wrote {len(records)} span(s) from {len(records)} read(s) of {source} to {args.otlp}")
    if broken:
        print(f"  {broken} line(s) of the read log were not valid JSON and are left out")
    return 0
