"""Judged sets in the app database: ``db.judged_sets``.

    judged_sets       one row per (name, version): a set re-imported with other
                      judgments is a new version, and the old one stays for the runs
                      judged against it
    judged_questions  the questions of each version, keyed by the content hash

How a set is read from a file: dashboard/evaluation/judged_sets.py.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from dashboard.database.model import utc_now
from dashboard.judged import JudgedQuestion, JudgedSet

if TYPE_CHECKING:
    from dashboard.database.model import SqlConnection

JUDGED_SET_TABLES = """
CREATE TABLE IF NOT EXISTS judged_sets (
    name TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    source TEXT,
    questions INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (name, content_hash)
);
CREATE TABLE IF NOT EXISTS judged_questions (
    content_hash TEXT NOT NULL,
    position INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    user_id TEXT,
    query_text TEXT NOT NULL,
    grades TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (content_hash, message_id)
);
"""


class JudgedSetRepository:
    """The ``judged_sets`` and ``judged_questions`` tables."""

    def __init__(self, conn: SqlConnection):
        self.conn = conn

    def save(self, judged: JudgedSet) -> str:
        """Keep `judged` under its name; a version already kept is not written again."""
        digest = judged.content_hash
        with self.conn.transaction(lock_key=f"judged set {judged.name}"):
            if not self.conn.run("SELECT 1 FROM judged_questions WHERE content_hash = ? LIMIT 1", (digest,)):
                self.conn.run_many(
                    "INSERT INTO judged_questions VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (digest, i, q.message_id, q.user_id, q.query, json.dumps(q.grades), json.dumps(list(q.tags)))
                        for i, q in enumerate(judged.questions)
                    ],
                )
            if not self.conn.run(
                "SELECT 1 FROM judged_sets WHERE name = ? AND content_hash = ?", (judged.name, digest)
            ):
                # Versions are numbered per name, so "newest" never depends on two
                # saves landing in different milliseconds.
                latest = self.conn.run("SELECT MAX(version) FROM judged_sets WHERE name = ?", (judged.name,))
                version = (latest[0][0] or 0) + 1
                self.conn.run(
                    "INSERT INTO judged_sets VALUES (?, ?, ?, ?, ?, ?)",
                    (judged.name, digest, judged.source, len(judged.questions), utc_now(), version),
                )
        return digest

    def all(self) -> list[dict[str, Any]]:
        """Every kept version, newest first within a name."""
        with self.conn.reading():
            rows = self.conn.run(
                "SELECT name, content_hash, source, questions, created_at FROM judged_sets ORDER BY name, version DESC"
            )
        return [dict(zip(("name", "content_hash", "source", "questions", "created_at"), r, strict=True)) for r in rows]

    def names(self) -> list[str]:
        return list(dict.fromkeys(s["name"] for s in self.all()))

    def load(self, name: str, content_hash: str | None = None) -> JudgedSet | None:
        """The named set at `content_hash`, or its newest version."""
        with self.conn.reading():
            if content_hash is None:
                row = self.conn.run(
                    "SELECT content_hash, source FROM judged_sets WHERE name = ? ORDER BY version DESC LIMIT 1",
                    (name,),
                )
            else:
                row = self.conn.run(
                    "SELECT content_hash, source FROM judged_sets WHERE name = ? AND content_hash = ?",
                    (name, content_hash),
                )
            if not row:
                return None
            digest, source = row[0]
            rows = self.conn.run(
                "SELECT message_id, user_id, query_text, grades, tags FROM judged_questions "
                "WHERE content_hash = ? ORDER BY position",
                (digest,),
            )
        questions = [
            JudgedQuestion(m, u, q, {k: int(v) for k, v in json.loads(g).items()}, tuple(json.loads(t)))
            for m, u, q, g, t in rows
        ]
        return JudgedSet(name, questions, source=source or "")
