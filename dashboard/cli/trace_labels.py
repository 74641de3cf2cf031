"""What `memlens phoenix` and `memlens langfuse` share: the --from/--to times of a
pull, the flags of a push, and the labels a push sends (people's and judges', read
from the label database)."""

from __future__ import annotations

import argparse
import os
from datetime import datetime
from typing import Any

from dashboard.cli.errors import CommandError


def add_push_flags(push: argparse.ArgumentParser) -> None:
    push.add_argument("--labels", help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)")
    who = push.add_mutually_exclusive_group()
    who.add_argument("--people-only", action="store_true", help="people's labels only")
    who.add_argument("--judges-only", action="store_true", help="judge labels only")


def time_flag(text: str | None, flag: str) -> datetime | None:
    """--from / --to as a UTC datetime (UTC when no zone is given); CommandError names the flag."""
    if not text:
        return None
    import pandas as pd

    try:
        stamp = pd.Timestamp(text)
    except ValueError as exc:
        raise CommandError(f"{flag} {text!r}: not a date or date-time ({exc})") from None
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.to_pydatetime()


def labels_to_push(args: argparse.Namespace) -> tuple[list[Any], list[Any], set[str]]:
    """(people's labels, judge labels, the message ids they name) per --labels and
    --people-only / --judges-only; CommandError when the database cannot be opened."""
    from connectors.common.paths import data_dir
    from dashboard.database import AppDatabase, app_database_target
    from dashboard.database.model import LabelStoreError

    try:
        db = AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))
    except (LabelStoreError, OSError) as exc:
        raise CommandError(f"cannot open the label database: {exc}") from exc
    try:
        people = [] if args.judges_only else db.labels.find()
        judges = [] if args.people_only else db.judge_labels.find()
    finally:
        db.close()
    return people, judges, {label.message_id for label in people} | {judged.message_id for judged in judges}
