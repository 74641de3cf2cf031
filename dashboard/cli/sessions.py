"""`memlens sessions ...`: manage labelling sessions in the label database.

    memlens sessions list [--labels URL] [--archived]
    memlens sessions edit NAME [--reviewers "ana, ben"] [--overlap 0.2]
    memlens sessions reassign NAME --from ana --to cy
    memlens sessions archive NAME [--undo]
    memlens sessions delete NAME (--export FILE | --keep-labels)

`edit` and `reassign` move only the turns nobody has started (a label or a skip
on one of its rows); started turns keep their reviewers. `delete` removes the
session and never a label; it asks for --export FILE (the session's labels, one per
pair by the rule every figure uses, JSONL) or --keep-labels to say the labels stay
in the database without a copy. Rules: dashboard/labels/session_admin.py.
--labels defaults to $MEMLENS_LABELS_URL, else labels.sqlite in the data directory.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dashboard.database import AppDatabase

DATABASE_HELP = "a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)"


def overlap_share(text: str) -> float:
    """An overlap: a share from 0 (no turn labelled twice) to 1 (every turn)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a share from 0 to 1, e.g. 0.2")
    return value


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("sessions", help="manage labelling sessions: list, edit, reassign, archive, delete")
    actions = parser.add_subparsers(dest="sessions_command", required=True)

    listing = actions.add_parser("list", help="every session, with reviewers, overlap and progress")
    listing.add_argument("--archived", action="store_true", help="archived sessions too")
    listing.set_defaults(handler=run_list)

    edit = actions.add_parser("edit", help="change a session's reviewers and overlap")
    edit.add_argument("name", metavar="NAME")
    edit.add_argument("--reviewers", default=None, help='names or e-mails, "ana, ben; cy" (empty: everyone)')
    edit.add_argument("--overlap", type=overlap_share, default=None, help="share of turns labelled by two reviewers")
    edit.set_defaults(handler=run_edit)

    move = actions.add_parser("reassign", help="hand one reviewer's unstarted turns to another")
    move.add_argument("name", metavar="NAME")
    move.add_argument("--from", dest="from_reviewer", required=True, metavar="REVIEWER")
    move.add_argument("--to", dest="to_reviewer", required=True, metavar="REVIEWER")
    move.set_defaults(handler=run_reassign)

    archive = actions.add_parser("archive", help="hide a session from the Label page (its labels still count)")
    archive.add_argument("name", metavar="NAME")
    archive.add_argument("--undo", action="store_true", help="open it again")
    archive.set_defaults(handler=run_archive)

    delete = actions.add_parser("delete", help="remove a session (its labels are kept)")
    delete.add_argument("name", metavar="NAME")
    kept = delete.add_mutually_exclusive_group(required=True)
    kept.add_argument("--export", metavar="FILE", type=Path, help="write the session's labels (JSONL) first")
    kept.add_argument("--keep-labels", action="store_true", help="delete without a copy; the labels stay in the database")
    delete.set_defaults(handler=run_delete)

    for action, sub in actions.choices.items():
        sub.add_argument("--labels", metavar="URL", default=None, help=DATABASE_HELP)
        sub.set_defaults(command_label=f"sessions {action}")  # what its errors start with


def _open(args: argparse.Namespace) -> AppDatabase:
    from connectors.common.paths import data_dir
    from dashboard.database import AppDatabase, app_database_target

    return AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))


def run_list(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        for session in db.sessions.all():
            if session.archived_at and not args.archived:
                continue
            labelled = len({(r.message_id, r.memory_id) for r in db.sessions.labels(session.name)})
            who = ", ".join(session.reviewers) or "everyone"
            state = f", archived {session.archived_at}" if session.archived_at else ""
            print(f"{session.name}: {labelled} of {session.size} rows labelled; reviewers {who}; "
                  f"overlap {session.overlap:.0%}{state}")  # fmt: skip
    finally:
        db.close()
    return 0


def run_edit(args: argparse.Namespace) -> int:
    from dashboard.labels.session_admin import edit_session

    db = _open(args)
    try:
        done = edit_session(db, args.name, reviewers=args.reviewers, overlap=args.overlap)
        session = db.sessions.get(args.name)
    finally:
        db.close()
    assert session is not None  # just edited
    print(f"session {args.name}: reviewers {', '.join(session.reviewers) or 'everyone'}, overlap {session.overlap:.0%}")
    print(done.line())
    return 0


def run_reassign(args: argparse.Namespace) -> int:
    from dashboard.labels.session_admin import reassign

    db = _open(args)
    try:
        done = reassign(db, args.name, args.from_reviewer, args.to_reviewer)
    finally:
        db.close()
    print(done.line())
    return 0


def run_archive(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        db.sessions.archive(args.name, archived=not args.undo)
    finally:
        db.close()
    print(f"session {args.name} {'opened again' if args.undo else 'archived; its labels still count'}")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    from dashboard.cli.errors import CommandError
    from dashboard.labels import export
    from dashboard.labels.counted import counted

    db = _open(args)
    try:
        if args.export is not None:
            found = counted(db, session=args.name, environ=dict(os.environ))
            args.export.write_text(export.to_jsonl(found.labels), encoding="utf-8")
            print(f"{len(found.labels)} label(s) of session {args.name} written to {args.export}")
        db.sessions.delete(args.name)
    except OSError as exc:  # the --export file cannot be written: nothing is deleted
        raise CommandError(f"{args.export}: {exc.strerror or exc}") from exc
    finally:
        db.close()
    print(f"session {args.name} deleted; its labels stay in the label database")
    return 0
