"""The app database: one schema for labels, labelling sessions, judged sets and
evaluation runs, in a SQLite file or in PostgreSQL for a team. Labels and
evaluation both build on it; it imports neither.

    open_label_store("/path/labels.sqlite")            SQLite file, WAL, synchronous=FULL
    open_label_store("postgresql://user@host/db")      PostgreSQL, for several app servers
"""

from __future__ import annotations

from pathlib import Path

from dashboard.database.postgres import PostgresLabelStore, is_postgres_url
from dashboard.database.store import DEFAULT_TIMEOUT_S, LABELS_URL_ENV, LabelStore


def open_label_store(target: str | Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> LabelStore:
    """A PostgreSQL URL opens the shared store; anything else is a SQLite file path.

    ``timeout``: seconds a read or write waits for a lock or an answer before it
    fails with a LabelStoreError (a page must answer a click, not hang)."""
    text = str(target)
    if is_postgres_url(text):
        return PostgresLabelStore(text, timeout=timeout)
    return LabelStore(text, timeout=timeout)


def label_store_target(environ: dict[str, str], data_directory: Path) -> str:
    """Where labels live: $MEMLENS_LABELS_URL (a PostgreSQL URL or a SQLite path),
    else labels.sqlite in the data directory."""
    return environ.get(LABELS_URL_ENV) or str(Path(data_directory) / "labels.sqlite")
