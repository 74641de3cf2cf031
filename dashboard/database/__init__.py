"""The app database: one schema for labels, labelling sessions, judge labels,
adjudications, judged sets and evaluation runs, in a SQLite file or in PostgreSQL
for a team (app_database.py). Labels and evaluation both build on it; it imports
neither.

    AppDatabase("/path/labels.sqlite")            SQLite file, WAL, synchronous=FULL
    AppDatabase("postgresql://user@host/db")      PostgreSQL, for several app servers
    AppDatabase("host=db dbname=labels user=u")   the same, as a key=value conninfo string
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from connectors.common.paths import data_dir
from dashboard.database.app_database import AppDatabase
from dashboard.database.connection import LABELS_URL_ENV
from dashboard.database.model import LabelStoreError
from dashboard.database.postgres import is_postgres_conninfo, is_postgres_url

__all__ = ["AppDatabase", "LabelStoreError", "app_database_target", "check_labels_url", "open_app_database"]

_URL_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):")


def open_app_database(environ: dict[str, str]) -> AppDatabase:
    """The app database the app uses: $MEMLENS_LABELS_URL, else labels.sqlite in the
    data directory."""
    return AppDatabase(app_database_target(environ, data_dir()))


def app_database_target(environ: dict[str, str], data_directory: Path) -> str:
    """Where the app database lives: $MEMLENS_LABELS_URL (a PostgreSQL URL, a PostgreSQL
    key=value string, or a SQLite file path), else labels.sqlite in the data
    directory. A value that is none of those raises LabelStoreError (see
    ``check_labels_url``) instead of becoming a file named after it."""
    configured = (environ.get(LABELS_URL_ENV) or "").strip()
    if not configured:
        return str(Path(data_directory) / "labels.sqlite")
    check_labels_url(configured)
    return configured


def check_labels_url(value: str) -> None:
    """LabelStoreError unless ``value`` is a PostgreSQL URL, a key=value conninfo
    string, or the path of a SQLite file in a directory this process can write
    (or create). The message never quotes the value: it may hold a password."""
    if is_postgres_url(value) or is_postgres_conninfo(value):
        return
    scheme = _URL_SCHEME.match(value)
    if scheme and "://" in value:
        raise LabelStoreError(
            f"{LABELS_URL_ENV} is a {scheme['scheme']}:// URL, which is not a label database memlens opens: "
            "give a postgresql:// URL, a PostgreSQL key=value string (host=... dbname=...) or a SQLite file path."
        )
    if "=" in value:
        raise LabelStoreError(
            f"{LABELS_URL_ENV} looks like a PostgreSQL key=value string but is not one memlens can read "
            "(each setting is key=value, values with spaces in single quotes); it is not taken as a file name."
        )
    folder = _nearest_existing(Path(value).expanduser().absolute().parent)
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise LabelStoreError(
            f"{LABELS_URL_ENV} names a SQLite file in a folder this server cannot write ({folder}): give a "
            "writable path, or a PostgreSQL URL or key=value string."
        )


def _nearest_existing(folder: Path) -> Path:
    """``folder`` or its nearest ancestor that exists: the one the label file's
    folder would be created in."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return folder
