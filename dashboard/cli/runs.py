"""`memlens runs`: the saved runs.

    memlens runs list                          one line per run: id, status, set, store, k, name
                                               (then as_of=TIME for a run ranked at a set time)
    memlens runs export RUN_ID --format trec   TREC run lines (qid Q0 docid rank score tag)
    memlens runs export RUN_ID --format jsonl  one object per question: ranked hits with scores
    memlens runs resume RUN_ID                 finish an incomplete run: the missing and the
                                               failed questions are asked again (same store
                                               settings; secrets from the environment);
                                               --allow-failures: exit 0 when some still fail
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from dashboard.cli.errors import CommandError
from dashboard.cli.run_report import add_allow_failures, print_progress, report
from dashboard.cli.store_options import open_configured

if TYPE_CHECKING:
    from dashboard.database import AppDatabase
    from dashboard.database.runs import RunInfo


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("runs", help="list, export or resume saved runs")
    actions = parser.add_subparsers(dest="runs_command", required=True)
    listing = actions.add_parser("list", help="one line per saved run")
    listing.set_defaults(handler=list_runs)
    export = actions.add_parser("export", help="write a run as TREC run lines or JSONL")
    export.add_argument("run_id", metavar="RUN_ID")
    export.add_argument("--format", choices=("trec", "jsonl"), default="trec")
    export.set_defaults(handler=export_run)
    resume = actions.add_parser("resume", help="finish an incomplete run")
    resume.add_argument("run_id", metavar="RUN_ID")
    resume.add_argument("--format", choices=("table", "json"), default="table")
    add_allow_failures(resume)
    resume.set_defaults(handler=resume_run)
    for action, sub in actions.choices.items():
        sub.set_defaults(command_label=f"runs {action}")  # what its errors start with
    return parser


def list_runs(args: argparse.Namespace) -> int:
    from dashboard.database import open_app_database

    for info in open_app_database(dict(os.environ)).runs.all():
        as_of = f"\tas_of={info.as_of}" if info.as_of else ""
        print(
            f"{info.run_id}\t{info.status}\t{info.set_name}@{info.set_hash}\t{info.fingerprint}\tk={info.k}\t"
            f"{info.started_at}\t{info.name}{as_of}"
        )
    return 0


def saved_run(run_id: str) -> tuple[AppDatabase, RunInfo]:
    """The app database and the run `run_id`; CommandError when there is no such run."""
    from dashboard.database import open_app_database

    db = open_app_database(dict(os.environ))
    info = db.runs.get(run_id)
    if info is None:
        raise CommandError(f"no run {run_id!r}")
    return db, info


def export_run(args: argparse.Namespace) -> int:
    from dashboard.cli.main import write_data
    from dashboard.evaluation.export import jsonl_lines, trec_lines

    db, info = saved_run(args.run_id)
    lines = trec_lines if args.format == "trec" else jsonl_lines
    for line in lines(info, db.runs.outcomes(info.run_id)):
        write_data(line + "\n")  # data, not a message: ids exactly as stored
    return 0


def resume_run(args: argparse.Namespace) -> int:
    from connectors.base import ConnectorError
    from dashboard.evaluation import runs

    db, info = saved_run(args.run_id)
    if not info.complete:
        try:
            store = open_configured(info.store, info.settings)
        except ConnectorError as exc:
            raise CommandError(f"cannot open the store: {exc}") from exc
        try:
            runs.resume_run(store, db, info.run_id, progress=print_progress)
        except runs.RunStopped as exc:  # what was answered is saved: its figures follow
            print(f"memlens runs resume: {exc}", file=sys.stderr)
        finally:
            store.close()
    return report(db, info.run_id, args.format, None, None, allow_failures=args.allow_failures,
                  command="memlens runs resume")
