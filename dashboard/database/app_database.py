"""The app database: everything memlens itself keeps, in one SQLite file or one
PostgreSQL database, reached through one connection pool and read and written
through one repository per concept:

    db.labels         people's relevance labels and their history     labels.py
    db.sessions       labelling sessions, their rows, assignments      sessions.py
                      and skips, and what a lead changes about them
    db.judge_labels   labels a judge suggested, and its agreement      judge_labels.py
    db.adjudications  a lead's final label of a disputed pair          adjudications.py
    db.judged_sets    judged questions, by name and version            judged_sets.py
    db.runs           evaluation runs and their answers                runs.py

A function that needs the database takes it as ``db``.
"""

from __future__ import annotations

from pathlib import Path

from dashboard.database.adjudications import AdjudicationRepository
from dashboard.database.connection import DEFAULT_TIMEOUT_S, Connection
from dashboard.database.judge_labels import JudgeLabelRepository
from dashboard.database.judged_sets import JudgedSetRepository
from dashboard.database.labels import LabelRepository
from dashboard.database.postgres import PostgresConnection, is_postgres_conninfo, is_postgres_url
from dashboard.database.runs import RunRepository
from dashboard.database.sessions import SessionRepository


class AppDatabase:
    """The app database at ``target``: a PostgreSQL URL or key=value conninfo string
    opens the shared database, anything else is a SQLite file path (created with its
    tables when missing; an older file gets the columns it lacks).

    ``timeout``: seconds a read or write waits for a lock or an answer before it
    fails with a LabelStoreError (a page must answer a click, not hang)."""

    def __init__(self, target: str | Path, *, timeout: float = DEFAULT_TIMEOUT_S):
        text = str(target)
        if is_postgres_url(text) or is_postgres_conninfo(text):
            self.conn: Connection = PostgresConnection(text, timeout=timeout)
        else:
            self.conn = Connection(text, timeout=timeout)
        self.labels = LabelRepository(self.conn)
        self.sessions = SessionRepository(self.conn)
        self.judge_labels = JudgeLabelRepository(self.conn)
        self.adjudications = AdjudicationRepository(self.conn)
        self.judged_sets = JudgedSetRepository(self.conn)
        self.runs = RunRepository(self.conn)

    def close(self) -> None:
        self.conn.close()
