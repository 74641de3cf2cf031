"""The app database's tables, in SQL both databases accept ({real} is REAL in SQLite,
DOUBLE PRECISION in PostgreSQL). Each table is written beside the repository that
reads it; this module puts them together and brings an older database up to date."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dashboard.database.adjudications import ADJUDICATION_TABLES
from dashboard.database.judge_labels import JUDGE_TABLES
from dashboard.database.judged_sets import JUDGED_SET_TABLES
from dashboard.database.labels import LABEL_TABLES
from dashboard.database.runs import RUN_TABLES
from dashboard.database.sessions import SESSION_TABLES

if TYPE_CHECKING:
    from dashboard.database.model import SqlConnection

_TABLES = LABEL_TABLES + SESSION_TABLES + JUDGED_SET_TABLES + RUN_TABLES + JUDGE_TABLES + ADJUDICATION_TABLES
SCHEMA = _TABLES.format(real="REAL", history_id="")
POSTGRES_SCHEMA = _TABLES.format(real="DOUBLE PRECISION", history_id="id BIGSERIAL PRIMARY KEY,\n    ")

# Columns added after their table first shipped, as (table, column, SQL type): a
# database an older memlens created gets them when it is opened, NULL in the rows
# it already holds.
# (label_sessions.drawn_store: the store a session was drawn on.)
# (judge_labels.store: the store a judge's grade was for, recorded since the judges came.)
# (label_sessions.archived_at: when a lead archived the session, NULL while it is open.)
ADDED_COLUMNS = (
    ("label_sessions", "drawn_store", "TEXT"),
    ("judge_labels", "store", "TEXT"),
    ("label_sessions", "archived_at", "TEXT"),
)


def add_missing_columns(conn: SqlConnection) -> None:
    """ADDED_COLUMNS a database created by an older memlens lacks (run inside the
    schema transaction, so two processes opening one old file add them once)."""
    for table, column, kind in ADDED_COLUMNS:
        if conn.dialect == "sqlite":
            if column not in {row[1] for row in conn.run(f"PRAGMA table_info({table})")}:
                conn.run(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        else:
            conn.run(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {kind}")
