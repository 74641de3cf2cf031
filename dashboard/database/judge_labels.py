"""Labels a judge suggested, kept beside the people's labels and never mixed in: ``db.judge_labels``.

A judge label is one judge's grade of one memory returned for one message: 0
unrelated, 1 related, 2 partly answers, 3 answers (TREC style), with a short reason
and, for a cross-encoder, its raw score. Its ``source`` says who graded it,
``judge:<name>@<model>``. Judge labels live in their own table
(``judge_labels``), so every reader of the ``labels`` table (exports, progress,
calibration, agreement between people) sees people's labels only, as before; a
figure built from judge labels asks for them by name.

The reason can quote the memory, so an export carries it only when the user opts
in to text, like the text columns of a person's label.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dashboard.database.model import utc_now

if TYPE_CHECKING:
    from dashboard.database.model import SqlConnection

JUDGE_TABLES = """
CREATE TABLE IF NOT EXISTS judge_labels (
    message_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    source TEXT NOT NULL,
    grade INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
    reason TEXT NOT NULL,
    score {real},
    rank INTEGER,
    store_score {real},
    created_at TEXT NOT NULL,
    store TEXT,
    PRIMARY KEY (message_id, memory_id, source)
);
CREATE TABLE IF NOT EXISTS judge_records (
    source TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""

GRADES = {0: "unrelated", 1: "related", 2: "partly answers", 3: "answers"}
# A grade at or over this counts as "relevant" against a person's binary label
# (UMBRELA and TREC RAG read 2 and 3 as relevant).
RELEVANT_GRADE = 2
JUDGE_PREFIX = "judge:"
JUDGE_COLUMNS = (
    "message_id", "memory_id", "source", "grade", "reason", "score", "rank", "store_score", "created_at", "store"
)
EXPORT_FIELDS = ("message_id", "memory_id", "source", "grade", "score", "rank", "store_score", "created_at")


def judge_source(name: str, model: str) -> str:
    """``judge:<name>@<model>``, how a judge label names who graded it."""
    return f"{JUDGE_PREFIX}{name}@{model}"


def source_name(source: str) -> str:
    """The judge's name in a source (``judge:umbrela@llama3`` -> ``umbrela``)."""
    return source.removeprefix(JUDGE_PREFIX).split("@", 1)[0]


@dataclass(frozen=True)
class JudgeLabel:
    message_id: str
    memory_id: str
    source: str
    grade: int
    reason: str
    score: float | None
    rank: int | None
    store_score: float | None
    created_at: str
    # The fingerprint of the store whose hit was graded (as a person's label names
    # it), so a store filter keeps a message only a judge graded; None for labels
    # written before memlens recorded it.
    store: str | None = None

    @property
    def relevant(self) -> bool:
        return self.grade >= RELEVANT_GRADE

    def export_row(self, include_text: bool = False) -> dict[str, Any]:
        row = {name: getattr(self, name) for name in EXPORT_FIELDS}
        if include_text:
            row["reason"] = self.reason
        return row


UPSERT_JUDGMENT = f"""INSERT INTO judge_labels ({', '.join(JUDGE_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT (message_id, memory_id, source) DO UPDATE SET
     grade=excluded.grade, reason=excluded.reason, score=excluded.score,
     rank=excluded.rank, store_score=excluded.store_score, created_at=excluded.created_at,
     store=excluded.store"""


def _judgment_row(
    message_id: str, memory_id: str, source: str, grade: int, reason: str,
    score: float | None, rank: int | None, store_score: float | None, store: str | None,
) -> tuple:
    if not source.startswith(JUDGE_PREFIX):
        raise ValueError(f"a judge label's source starts with {JUDGE_PREFIX!r}, got {source!r}")
    if isinstance(grade, bool) or grade not in GRADES:
        raise ValueError(f"grade must be 0, 1, 2 or 3, got {grade!r}")
    return (message_id, memory_id, source, grade, reason, score, rank, store_score, utc_now(), store)


class JudgeLabelRepository:
    """``db.judge_labels``: judge labels in the app database, in their own table
    (``judge_labels``), and each judge's measured agreement (``judge_records``)."""

    def __init__(self, conn: SqlConnection):
        self.conn = conn

    def save(
        self,
        *,
        message_id: str,
        memory_id: str,
        source: str,
        grade: int,
        reason: str,
        score: float | None = None,
        rank: int | None = None,
        store_score: float | None = None,
        store: str | None = None,
    ) -> None:
        """One judge label, written at once (last write wins), so a killed run keeps it."""
        row = _judgment_row(message_id, memory_id, source, grade, reason, score, rank, store_score, store)
        with self.conn.transaction(lock_key="\x1f".join((message_id, memory_id, source))):
            self.conn.run(UPSERT_JUDGMENT, row)

    def save_many(self, judgments: Iterable[dict[str, Any]]) -> int:
        """Several judge labels (each the keyword arguments of ``save``) in one
        transaction: a run saving the grades that arrived together pays one disk sync,
        not one per grade. Returns how many were saved."""
        rows = [
            _judgment_row(j["message_id"], j["memory_id"], j["source"], j["grade"], j["reason"], j.get("score"),
                          j.get("rank"), j.get("store_score"), j.get("store"))
            for j in judgments
        ]
        if rows:
            with self.conn.transaction():
                for row in rows:
                    self.conn.run(UPSERT_JUDGMENT, row)
        return len(rows)

    def find(self, *, source: str | None = None, message_ids: Iterable[str] | None = None) -> list[JudgeLabel]:
        sql = f"SELECT {', '.join(JUDGE_COLUMNS)} FROM judge_labels"
        where: list[str] = []
        args: list[Any] = []
        if source is not None:
            where.append("source = ?")
            args.append(source)
        wanted = sorted(set(message_ids)) if message_ids is not None else None
        if wanted is not None and len(wanted) <= 500:  # one turn on the Label page: read only its rows
            where.append(f"message_id IN ({', '.join('?' * len(wanted))})" if wanted else "1 = 0")
            args += wanted
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY message_id, memory_id, source"
        with self.conn.reading():
            rows = [JudgeLabel(*row) for row in self.conn.run(sql, args)]
        if wanted is not None and len(wanted) > 500:  # a session's worth: filter after one read
            keep = set(wanted)
            rows = [r for r in rows if r.message_id in keep]
        return rows

    def sources(self) -> list[str]:
        with self.conn.reading():
            return [r[0] for r in self.conn.run("SELECT DISTINCT source FROM judge_labels ORDER BY source")]

    def save_record(self, source: str, record: dict[str, Any]) -> None:
        """The judge's measured agreement with people (`memlens judge align`), ids and
        figures only, kept per source so every page and command using the judge shows it."""
        if not source.startswith(JUDGE_PREFIX):
            raise ValueError(f"a judge's source starts with {JUDGE_PREFIX!r}, got {source!r}")
        with self.conn.transaction(lock_key="judge_record\x1f" + source):
            self.conn.run(
                """INSERT INTO judge_records (source, record, updated_at) VALUES (?, ?, ?)
                   ON CONFLICT (source) DO UPDATE SET record=excluded.record, updated_at=excluded.updated_at""",
                (source, json.dumps(record, sort_keys=True), utc_now()),
            )

    def record(self, source: str) -> dict[str, Any] | None:
        with self.conn.reading():
            rows = self.conn.run("SELECT record, updated_at FROM judge_records WHERE source = ?", (source,))
        if not rows:
            return None
        record = json.loads(rows[0][0])
        return {**record, "updated_at": rows[0][1]} if isinstance(record, dict) else None

    def summary(self, source: str) -> dict[str, Any]:
        """What the Label page needs of a judge on every rerun, counted by the database
        rather than read row by row: people's labels against its verdicts (each
        person's label of a pair it graded is one comparison), its grades, and its
        reasons (how many distinct, and those that look like a template slot)."""
        with self.conn.reading():
            confusion = self.conn.run(
                f"""SELECT l.label, CASE WHEN j.grade >= {RELEVANT_GRADE} THEN 1 ELSE 0 END, COUNT(*)
                    FROM labels l JOIN judge_labels j ON l.message_id = j.message_id AND l.memory_id = j.memory_id
                    WHERE j.source = ? GROUP BY 1, 2""",
                (source,),
            )
            grades = self.conn.run("SELECT grade, COUNT(*) FROM judge_labels WHERE source = ? GROUP BY grade", (source,))
            reasons = self.conn.run(
                "SELECT COUNT(DISTINCT reason), MIN(reason) FROM judge_labels WHERE source = ?", (source,)
            )
            # The patterns go as parameters: a literal % in the SQL text would be read
            # as a placeholder by PostgreSQL's driver.
            slots = self.conn.run(
                "SELECT reason, COUNT(*) FROM judge_labels WHERE source = ? AND "
                "(reason LIKE ? OR reason LIKE ? OR reason LIKE ?) GROUP BY reason",
                (source, "%<%>%", "%...%", "%…%"),
            )
        return {
            "confusion": [(label, bool(relevant), int(count)) for label, relevant, count in confusion],
            "grades": {int(grade): int(count) for grade, count in grades},
            "distinct_reasons": int(reasons[0][0] or 0) if reasons else 0,
            "a_reason": reasons[0][1] if reasons else None,
            "slot_like": {reason: int(count) for reason, count in slots},
        }
