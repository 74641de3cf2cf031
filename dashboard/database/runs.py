"""Evaluation runs in the app database: ``db.runs``.

    eval_runs         one row per run: the set and its hash, the store's name,
                      fingerprint and public settings (never a secret), k, times,
                      how many questions it has answered out of how many
    run_results       one row per (run, question): the ranked hits (id, score, raw
                      score, breakdown, weights), latency, error; the query text only
                      when the reviewer opted in

A run is complete only when ``finished_at`` is set and every question has a row
without an error: a process killed mid-run leaves it incomplete, with its progress,
and so does a question the store failed (timeout, error after retries, refused
key); resuming asks the missing and the failed questions again.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dashboard.database.model import utc_now

if TYPE_CHECKING:
    from dashboard.database.model import SqlConnection

RUN_TABLES = """
CREATE TABLE IF NOT EXISTS eval_runs (
    run_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    set_name TEXT NOT NULL,
    set_hash TEXT NOT NULL,
    store TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    settings TEXT NOT NULL,
    k INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    total INTEGER NOT NULL,
    keep_text INTEGER NOT NULL DEFAULT 0,
    notes TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS run_results (
    run_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    user_id TEXT,
    hits TEXT NOT NULL,
    latency_ms {real},
    error TEXT,
    query_text TEXT,
    PRIMARY KEY (run_id, message_id)
);
"""


@dataclass(frozen=True)
class RunHit:
    memory_id: str
    rank: int
    score: float | None
    raw_score: float | None = None
    breakdown: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)

    def as_list(self) -> list[Any]:
        return [self.memory_id, self.rank, self.score, self.raw_score, self.breakdown, self.weights]


@dataclass(frozen=True)
class QueryOutcome:
    message_id: str
    position: int
    user_id: str | None
    hits: list[RunHit]
    latency_ms: float | None = None
    error: str | None = None
    query_text: str | None = None  # only when the reviewer opted in

    def ranking(self) -> list[str]:
        return [h.memory_id for h in sorted(self.hits, key=lambda h: h.rank)]


@dataclass
class RunInfo:
    run_id: str
    name: str
    set_name: str
    set_hash: str
    store: str
    fingerprint: str
    settings: dict[str, Any]
    k: int
    started_at: str
    finished_at: str | None
    total: int
    done: int = 0
    keep_text: bool = False
    notes: list[str] = field(default_factory=list)
    failed: int = 0  # questions with a row holding an error: asked, not answered

    @property
    def finished(self) -> bool:
        """Every question was asked (some may have failed)."""
        return self.finished_at is not None and self.done >= self.total

    @property
    def display_name(self) -> str:
        """What the pages call the run's store: ``Chroma · support_memories (localhost:8000)``."""
        from connectors.common.store_names import store_name

        return store_name(self.store, self.settings)

    @property
    def as_of(self) -> str | None:
        """The clock the store ranked at (``--as-of``, kept in the settings); None: the run's own time."""
        value = self.settings.get("as_of")
        return str(value) if value else None

    @property
    def complete(self) -> bool:
        """Every question answered: a failed question is not an answer, so a store
        outage cannot pass for a run that returned nothing."""
        return self.finished and self.failed == 0

    @property
    def answered(self) -> int:
        return self.done - self.failed

    @property
    def status(self) -> str:
        if self.complete:
            return "complete"
        if self.failed:
            return f"incomplete ({self.answered} of {self.total}; {self.failed} failed)"
        return f"incomplete ({self.done} of {self.total})"


_RUN_COLUMNS = (
    "run_id, name, set_name, set_hash, store, fingerprint, settings, k, started_at, finished_at, total, keep_text, notes"
)


def new_run_id() -> str:
    # Time-ordered, so `runs list` reads oldest to newest; the random tail keeps two
    # runs started in one second apart.
    return utc_now().replace("-", "").replace(":", "")[:15] + "-" + secrets.token_hex(3)


class RunRepository:
    """The ``eval_runs`` and ``run_results`` tables."""

    def __init__(self, conn: SqlConnection):
        self.conn = conn

    def start(self, info: RunInfo) -> None:
        with self.conn.transaction(lock_key=f"run {info.run_id}"):
            self.conn.run(
                f"INSERT INTO eval_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    info.run_id,
                    info.name,
                    info.set_name,
                    info.set_hash,
                    info.store,
                    info.fingerprint,
                    json.dumps(info.settings, sort_keys=True, default=str),
                    info.k,
                    info.started_at,
                    None,
                    info.total,
                    int(info.keep_text),
                    json.dumps(info.notes),
                ),
            )

    def save_outcomes(self, run_id: str, outcomes: list[QueryOutcome]) -> None:
        """One transaction per batch: a killed process loses at most the batch it was on."""
        if not outcomes:
            return
        with self.conn.transaction(lock_key=f"run {run_id}"):
            self.conn.run_many(
                "INSERT INTO run_results VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, message_id) DO UPDATE SET "
                "hits=excluded.hits, latency_ms=excluded.latency_ms, error=excluded.error, "
                "query_text=excluded.query_text",
                [
                    (
                        run_id,
                        o.position,
                        o.message_id,
                        o.user_id,
                        json.dumps([h.as_list() for h in o.hits]),
                        o.latency_ms,
                        o.error,
                        o.query_text,
                    )
                    for o in outcomes
                ],
            )

    def finish(self, run_id: str, notes: list[str] | None = None) -> None:
        with self.conn.transaction(lock_key=f"run {run_id}"):
            self.conn.run("UPDATE eval_runs SET finished_at = ? WHERE run_id = ?", (utc_now(), run_id))
            if notes is not None:
                self.conn.run("UPDATE eval_runs SET notes = ? WHERE run_id = ?", (json.dumps(notes), run_id))

    def all(self) -> list[RunInfo]:
        with self.conn.reading():
            rows = self.conn.run(f"SELECT {_RUN_COLUMNS} FROM eval_runs ORDER BY started_at, run_id")
            done = dict(self.conn.run("SELECT run_id, COUNT(*) FROM run_results GROUP BY run_id"))
            failed = dict(
                self.conn.run("SELECT run_id, COUNT(*) FROM run_results WHERE error IS NOT NULL GROUP BY run_id")
            )
        return [_run_info(row, done.get(row[0], 0), failed.get(row[0], 0)) for row in rows]

    def get(self, run_id: str) -> RunInfo | None:
        with self.conn.reading():
            rows = self.conn.run(f"SELECT {_RUN_COLUMNS} FROM eval_runs WHERE run_id = ?", (run_id,))
            done = self.conn.run("SELECT COUNT(*) FROM run_results WHERE run_id = ?", (run_id,))
            failed = self.conn.run(
                "SELECT COUNT(*) FROM run_results WHERE run_id = ? AND error IS NOT NULL", (run_id,)
            )
        return _run_info(rows[0], done[0][0], failed[0][0]) if rows else None

    def outcomes(self, run_id: str) -> list[QueryOutcome]:
        with self.conn.reading():
            rows = self.conn.run(
                "SELECT message_id, position, user_id, hits, latency_ms, error, query_text FROM run_results "
                "WHERE run_id = ? ORDER BY position",
                (run_id,),
            )
        return [
            QueryOutcome(
                message_id=m,
                position=p,
                user_id=u,
                hits=[RunHit(h[0], int(h[1]), h[2], h[3], h[4], h[5]) for h in json.loads(hits)],
                latency_ms=latency,
                error=error,
                query_text=text,
            )
            for m, p, u, hits, latency, error, text in rows
        ]


def _run_info(row: tuple, done: int, failed: int = 0) -> RunInfo:
    (run_id, name, set_name, set_hash, store, fp, settings, k, started, finished, total, keep_text, notes) = row
    return RunInfo(
        run_id=run_id,
        name=name,
        set_name=set_name,
        set_hash=set_hash,
        store=store,
        fingerprint=fp,
        settings=json.loads(settings),
        k=int(k),
        started_at=started,
        finished_at=finished,
        total=int(total),
        done=int(done),
        keep_text=bool(keep_text),
        notes=json.loads(notes or "[]"),
        failed=int(failed),
    )
