"""`memlens labels export|adjudicate|history`: the label database from the command line
(each action registered in dashboard/cli/labels.py by its own small module).

    memlens labels export --labels URL [--session NAME] --format jsonl|csv|qrels [--include-text]
    memlens labels adjudicate SESSION --adjudicator NAME [--labels URL]
        [--message ID --memory ID --label relevant|not_relevant --note TEXT]
    memlens labels history [--labels URL] [--limit N]

`export` writes one label per pair, by the rule every figure uses
(dashboard/labels/resolution.py): the Label page's downloads and the Calibrate page
count the same pairs. Ids and scores only unless --include-text (the texts exist
only where the labeller opted in). The rule and what it left out go to stderr.

`adjudicate` walks the session's disagreements (ties and majorities alike) and
asks for each final label and a note; with --message/--memory/--label/--note it
sets one without asking. Each is stored as its own row with who and when.

`history` prints label_history: who changed which pair's label from what to what, when.

--labels defaults to $MEMLENS_LABELS_URL, else labels.sqlite in the data directory.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cli.errors import CommandError

DATABASE_HELP = "a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)"


def add_export(actions: Any) -> argparse.ArgumentParser:
    export = actions.add_parser("export", help="one label per pair, by the rule every figure uses")
    export.add_argument("--labels", metavar="URL", default=None, help=DATABASE_HELP)
    export.add_argument("--session", metavar="NAME", default=None, help="only this labelling session's labels")
    export.add_argument("--format", choices=("jsonl", "csv", "qrels"), default="jsonl")
    export.add_argument("--include-text", action="store_true", help="also the query and memory text, where kept")
    export.set_defaults(handler=run_export)
    return export


def add_adjudicate(actions: Any) -> argparse.ArgumentParser:
    adjudicate = actions.add_parser("adjudicate", help="set the final label of a session's disagreements")
    adjudicate.add_argument("session", metavar="SESSION")
    adjudicate.add_argument("--labels", metavar="URL", default=None, help=DATABASE_HELP)
    adjudicate.add_argument("--adjudicator", required=True, metavar="NAME", help="who decides (stored with each row)")
    adjudicate.add_argument("--message", metavar="ID", default=None, help="one pair's message id (with --memory)")
    adjudicate.add_argument("--memory", metavar="ID", default=None, help="one pair's memory id (with --message)")
    adjudicate.add_argument("--label", choices=("relevant", "not_relevant"), default=None)
    adjudicate.add_argument("--note", default=None, help="why (required for every adjudication)")
    adjudicate.set_defaults(handler=run_adjudicate)
    return adjudicate


def add_history(actions: Any) -> argparse.ArgumentParser:
    history = actions.add_parser("history", help="who changed which label, when (label_history)")
    history.add_argument("--labels", metavar="URL", default=None, help=DATABASE_HELP)
    history.add_argument("--limit", type=int, default=None, help="only the last N changes")
    history.set_defaults(handler=run_history)
    return history


def _open(args: argparse.Namespace):
    from connectors.common.paths import data_dir
    from dashboard.database import AppDatabase, app_database_target

    return AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))


def run_export(args: argparse.Namespace) -> int:
    from dashboard.cli.main import write_data
    from dashboard.labels import export
    from dashboard.labels.counted import counted

    db = _open(args)
    try:
        found = counted(db, session=args.session, environ=dict(os.environ))
    finally:
        db.close()
    for line in found.resolution.lines():
        print(line, file=sys.stderr)
    if args.format == "qrels":
        write_data(export.to_qrels(found.labels))
    elif args.format == "csv":
        write_data(export.to_csv(found.labels, include_text=args.include_text))
    else:
        write_data(export.to_jsonl(found.labels, include_text=args.include_text))
    return 0


def run_adjudicate(args: argparse.Namespace) -> int:
    from dashboard.labels.adjudication import disputed_pairs
    from dashboard.labels.counted import counted

    one = (args.message, args.memory, args.label, args.note)
    if any(v is not None for v in one) and not all(v is not None for v in one):
        raise CommandError("one pair needs --message, --memory, --label and --note")
    # said before the database is opened, not as the store's ValueError afterwards
    if not args.adjudicator.strip():
        raise CommandError("--adjudicator needs a name: who decides is stored with each row")
    if args.note is not None and not args.note.strip():
        raise CommandError("--note needs a reason: the next reader of the label needs to know why")
    db = _open(args)
    try:
        found = counted(db, session=args.session, environ=dict(os.environ))
        disputed = disputed_pairs(found)
        if args.message is not None:
            if (args.message, args.memory) not in {(d.message_id, d.memory_id) for d in disputed}:
                raise CommandError(f"{args.message} {args.memory} is not a disagreement of session {args.session!r}")
            decided = db.adjudications.save(
                message_id=args.message, memory_id=args.memory, label=args.label,
                adjudicator=args.adjudicator, note=args.note, session=args.session,
            )  # fmt: skip
            print(f"{decided.message_id} {decided.memory_id}: {decided.label} (by {decided.adjudicator}, {decided.created_at})")
            return 0
        print(f"{len(disputed)} disagreement(s) in session {args.session}; answer r (relevant), n (not relevant), "
              "or Enter to leave one as it is.")  # fmt: skip
        for row in disputed:
            print(row.describe())
            answer = input("final label [r/n/Enter]: ").strip().lower()
            if answer not in ("r", "n"):
                continue
            note = input("note (why): ").strip()
            if not note:
                print("  no note: left as it is", file=sys.stderr)
                continue
            db.adjudications.save(
                message_id=row.message_id, memory_id=row.memory_id,
                label="relevant" if answer == "r" else "not_relevant",
                adjudicator=args.adjudicator, note=note, session=args.session,
            )  # fmt: skip
            print("  saved")
    except EOFError:
        print("", file=sys.stderr)
    finally:
        db.close()
    return 0


def run_history(args: argparse.Namespace) -> int:
    db = _open(args)
    try:
        changes = db.labels.changes(limit=args.limit)
    finally:
        db.close()
    for change in changes:
        print(
            f"{change['changed_at']} {change['reviewer']} {change['message_id']} {change['memory_id']}: "
            f"{change['old_label'] or '(none)'} -> {change['new_label'] or '(removed)'}"
        )
    return 0
