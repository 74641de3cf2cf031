"""`memlens labels import FILE --session NAME`: people's labels from a file as a session.

    $ memlens labels import people.qrels --session trec-week
    people.qrels: 150 label(s) from 1 reviewer(s) (qrels)
    session trec-week: 150 rows in 30 turns, 150 label(s) imported

FILE is a label JSONL or CSV export or TREC qrels (dashboard/labels/people_files.py).
The session's rows are the labelled pairs; each label is saved under its reviewer
(`--reviewer` for rows that name none; default "imported"), so the session serves
as the people side of `memlens agreement` and of the Label page's judge figures.
Bad rows are named by line and field on standard error and skipped.

Exit status: 0 when imported, 2 when the file cannot be read, holds no usable label,
or the session name is taken (nothing is written then).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cli.errors import CommandError, warning

SHOWN_ISSUES = 20


def add_parser(actions: Any) -> argparse.ArgumentParser:
    from dashboard.labels.people_files import DEFAULT_REVIEWER, FORMATS

    parser = actions.add_parser("import", help="people's labels from a file (JSONL, CSV, TREC qrels) as a session")
    parser.add_argument("file", metavar="FILE", help="a label JSONL or CSV export, or TREC qrels")
    parser.add_argument("--session", required=True, metavar="NAME", help="the new session's name")
    parser.add_argument("--format", choices=FORMATS, default=None, help="the file's format (default: from its name and first line)")
    parser.add_argument("--reviewer", default=DEFAULT_REVIEWER, help=f"the reviewer of rows that name none (default {DEFAULT_REVIEWER})")
    parser.add_argument("--labels", default=None, help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from connectors.common.paths import data_dir
    from dashboard.database import AppDatabase, app_database_target
    from dashboard.database.sessions import SessionExists
    from dashboard.labels.people_files import import_as_session, read_people_labels
    from dashboard.labels.resolution import lookalike_notes

    if not args.session.strip() or not args.reviewer.strip():
        raise CommandError("--session and --reviewer must not be blank")
    found = read_people_labels(args.file, fmt=args.format, reviewer=args.reviewer)
    for issue in found.issues[:SHOWN_ISSUES]:
        warning(str(issue))
    if len(found.issues) > SHOWN_ISSUES:
        warning(f"... and {len(found.issues) - SHOWN_ISSUES} more issue(s)")
    print(found.summary())
    for note in lookalike_notes(label.reviewer for label in found.labels):
        print(note, file=sys.stderr)  # look-alike names from other scripts: flagged, not merged
    if not found.labels:
        raise CommandError(f"{args.file} holds no usable label; nothing imported")
    db = AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))
    try:
        session, written = import_as_session(db, found, args.session.strip())
    except SessionExists as exc:
        raise CommandError(f"{exc}; pick another --session") from exc
    finally:
        db.close()
    turns = len({label.message_id for label in found.labels})
    print(f"session {session.name}: {session.size} rows in {turns} turns, {written} label(s) imported")
    return 0
