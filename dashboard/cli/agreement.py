"""`memlens agreement SESSION`: how far a session's reviewers agree, and on what not.

    $ memlens agreement demo
    session demo: 40 rows in 8 turns, reviewers ana, ben
    Cohen's kappa 0.780 over 12 row(s) labelled by two or more reviewers (raw agreement 91.7%)
    1 disagreement(s):
      demo-q03 sam-02 rank 2 score 0.412: ana relevant, ben not_relevant

Reads the label database the app uses ($MEMLENS_LABELS_URL, else labels.sqlite in
$MEMLENS_DATA_DIR) unless --labels names one. Exits 1 when the session does not
exist or the database cannot be opened, with the reason on standard error.
"""

from __future__ import annotations

import argparse
import os
import sys

from connectors.common.paths import data_dir
from dashboard.database import label_store_target, open_label_store
from dashboard.database.model import LabelStoreError
from dashboard.labels.agreement import agreement


def add_parser(commands) -> None:
    parser = commands.add_parser("agreement", help="reviewer agreement of a labelling session")
    parser.add_argument("session", help="the labelling session's name")
    parser.add_argument(
        "--labels",
        default=None,
        help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    target = args.labels or label_store_target(dict(os.environ), data_dir())
    try:
        store = open_label_store(target)
    except (LabelStoreError, OSError) as exc:
        print(f"memlens agreement: cannot open the label database: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a driver error: its text may hold the URL, so name the type only
        print(f"memlens agreement: cannot open the label database ({type(exc).__name__})", file=sys.stderr)
        return 1
    try:
        session = store.session(args.session)
        if session is None:
            known = ", ".join(s.name for s in store.sessions()) or "none"
            print(f"memlens agreement: no session named {args.session!r} (sessions: {known})", file=sys.stderr)
            return 1
        items = store.session_items(session.name)
        report = agreement(store.session_labels(session.name))
    finally:
        store.close()
    turns = len({item.message_id for item in items})
    print(
        f"session {session.name}: {len(items)} rows in {turns} turns, "
        f"reviewers {', '.join(report.reviewers) or 'none yet'}"
    )
    print(report.headline())
    print(f"{len(report.disagreements)} disagreement(s)" + (":" if report.disagreements else ""))
    for disagreement in report.disagreements:
        print(f"  {disagreement.describe()}")
    return 0
