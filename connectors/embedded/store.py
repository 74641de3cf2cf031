"""The embedded store: a SQLite file of memories and their embeddings.

It ranks the way hosted memory APIs document their ranking: a weighted sum of
components, each in [0, 1] and each returned in ``Hit.breakdown``:

    semantic    cosine similarity of query and memory embeddings (negatives as 0)
    recency     exp(-hours_since_created * ln 2 / half_life_hours)
    importance  the memory's own importance in [0.05, 1] (default 0.5)
    usage       min(1, ln(1 + usage_count) / 5)

Embeddings are stored in SQLite (float32 blobs) so a restart never re-encodes, and
held in one numpy matrix so a query is one matrix-vector product. Queries are
read-only unless ``count_usage`` is set: an inspector must not change what it
inspects.
"""

from __future__ import annotations

import builtins
import json
import math
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from connectors.base import (
    SIGNALS,
    FeedbackResult,
    Hit,
    InvalidRequest,
    Memory,
    Neighbour,
    NotFound,
    QueryResult,
    ScoreKind,
    check_query,
    context_block,
)
from connectors.common import inbound
from connectors.common.score_spaces import space_for
from connectors.embedded.clock import ClockCount, existing, hide_later
from connectors.embedded.files import open_for_writing, open_read_only, read_memories
from connectors.embedded.importing import (  # noqa: F401  (public names of this module since before the split)
    DEFAULT_IMPORTANCE,
    IMPORTANCE_MAX,
    IMPORTANCE_MIN,
    ImportReport,
    as_utc,
    parse_jsonl,
    read_memories_file,
)
from connectors.embedded.scan import Anchored, recency_rate, scan, top_k
from connectors.embedded.weights import parse_weights
from connectors.embedding import model_loader as embedding

DEFAULT_HALF_LIFE_HOURS = 72.0
TEXT_READ_IDS = 900  # memory ids per text read

# How far one feedback signal moves importance before the streak multiplier.
FEEDBACK_STEP = {"positive": 0.10, "retrieved": 0.05, "ignored": -0.03, "negative": -0.10}


class EmbeddedStore:
    """A memory store in one SQLite file; see the module docstring for ranking."""

    name = "embedded"
    score_kind = ScoreKind.SIMILARITY
    score_space = space_for("embedded")  # its weighted similarity, as sent

    def __init__(
        self,
        path: str | Path,
        *,
        weights: dict[str, float] | str | None = None,
        half_life_hours: float = DEFAULT_HALF_LIFE_HOURS,
        model: str | None = None,
        count_usage: bool = False,
        now: Callable[[], datetime] | None = None,
        read_only: bool = False,
        as_of: datetime | None = None,
    ):
        if not half_life_hours or half_life_hours <= 0:
            raise InvalidRequest(f"half_life_hours must be above 0, got {half_life_hours!r}")
        self.path = Path(path)
        self.weights = parse_weights(weights)
        self.half_life_hours = float(half_life_hours)
        self.model = model or embedding.DEFAULT_MODEL
        # What the file's `model` column says embedded a memory: the model itself for an
        # export folder (embedding.model_name), so memories embedded by the model and
        # queries through its export count as one model, and a missing model is said now.
        self.model_name = embedding.model_name(model)
        self.count_usage = count_usage
        # as_of: the store as it was then (connectors/embedded/clock.py): recency is
        # computed at it and memories created after it are not returned.
        self.as_of = as_of
        self._now = now or ((lambda: as_of) if as_of is not None else (lambda: datetime.now(UTC)))
        self._lock = threading.RLock()
        self.read_only = read_only
        self._db = open_read_only(self.path) if read_only else open_for_writing(self.path)
        self._loaded_version: int | None = None
        self._ids: np.ndarray = np.empty(0, dtype=object)
        self._vectors = np.empty((0, embedding.DIMENSIONS), dtype=np.float32)

    # ------------------------------------------------------------ in-memory index

    def _data_version(self) -> int:
        return self._db.execute("PRAGMA data_version").fetchone()[0]

    def _ensure_loaded(self) -> None:
        """(Re)read the arrays when this or another connection changed the file.

        Rows are read in the order of the memories_user index, so each user's
        memories are one contiguous slice of every array: a per-user query scans a
        view of the matrix instead of copying that user's rows out of it."""
        version = self._data_version()
        if version == self._loaded_version and self._dirty is False:
            return
        loaded = read_memories(self._db, embedding.DIMENSIONS)
        self._by_user = loaded.by_user
        self._ids, self._created, self._importance, self._usage = loaded.ids, loaded.created, loaded.importance, loaded.usage
        self._usage_component = np.minimum(1.0, np.log1p(loaded.usage.astype(np.float64)) / 5.0)
        self._fixed = None
        self._vectors = loaded.vectors
        self._loaded_version = version
        self._dirty = False

    _dirty = True
    _fixed: Anchored | None = None

    def _anchored(self) -> Anchored:
        """The query-independent part of every score (see connectors/embedded/scan.py),
        computed once per load and again if the weights or half-life change."""
        w = self.weights
        key = (w["importance"], w["usage"], self.half_life_hours)
        if self._fixed is None or self._fixed.key != key:
            fixed = w["importance"] * self._importance.astype(np.float64) + w["usage"] * self._usage_component
            self._fixed = Anchored.build(self._created, fixed, recency_rate(self.half_life_hours), key)
        return self._fixed

    # ------------------------------------------------------------ protocol

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        started = time.perf_counter()
        query_vector = embedding.encode([text], model=self.model)[0]
        with self._lock:
            self._ensure_loaded()
            # Only None means "every user": an empty id must not widen the search.
            rows = slice(None) if user_id is None else self._by_user.get(user_id, slice(0, 0))
            hits = self._rank(query_vector, rows, k)
            clock = self._clock_count(rows)
            if self.count_usage and hits:
                self._db.executemany(
                    "UPDATE memories SET usage_count = usage_count + 1 WHERE id = ?",
                    [(h.memory_id,) for h in hits],
                )
                self._db.commit()
                self._dirty = True
        latency_ms = (time.perf_counter() - started) * 1000
        notes = [issues] if (issues := self.meta("demo_import_issues")) else []
        if clock is not None and (said := clock.note("this user's" if user_id is not None else "the store's")):
            notes.append(said)
        context = context_block(hits)
        raw = {
            "query": text,
            "user_id": user_id,
            "k": k,
            "weights": self.weights,
            "half_life_hours": self.half_life_hours,
            "memories": [
                {"id": h.memory_id, "score": h.score, "scoring_breakdown": h.breakdown} for h in hits
            ],
        }
        return QueryResult(
            query=text, hits=hits, context=context, latency_ms=latency_ms, raw=raw, notes=notes, score_space=self.score_space
        )

    def query_many(
        self, texts: list[str], user_ids: list[str | None], k: int = 5, *, batch_size: int = 64
    ) -> list[QueryResult]:
        """Many queries at once (an evaluation run): the questions are encoded in
        batches, which is most of the cost of a query, then each is scanned over its
        own user's memories. Each result's latency is its share of the encoding plus
        its own scan. Read-only, like query() without count_usage."""
        if len(texts) != len(user_ids):
            raise InvalidRequest("query_many: one user id per query text")
        if k < 1:
            raise InvalidRequest(f"k must be at least 1, got {k}")
        if not texts:
            return []
        started = time.perf_counter()
        vectors = embedding.encode(list(texts), model=self.model, batch_size=batch_size)
        encode_ms = (time.perf_counter() - started) * 1000 / len(texts)
        results = []
        with self._lock:
            self._ensure_loaded()
            scanned = []
            for user_id, vector in zip(user_ids, vectors, strict=True):
                scan_started = time.perf_counter()
                rows = slice(None) if user_id is None else self._by_user.get(user_id, slice(0, 0))
                best, columns = self._scan(vector, rows, k)
                scanned.append((rows, best, columns, time.perf_counter() - scan_started))
            # The texts of every hit in the batch in one read, not one read per question.
            started = time.perf_counter()
            found = self._texts([self._ids[rows][i] for rows, best, _, _ in scanned for i in best])
            read_ms = (time.perf_counter() - started) * 1000 / len(texts)
            for text, (rows, best, columns, scan_s) in zip(texts, scanned, strict=True):
                built = time.perf_counter()
                hits = self._hits(rows, best, columns, found)
                latency_ms = encode_ms + read_ms + (scan_s + time.perf_counter() - built) * 1000
                results.append(QueryResult(query=text, hits=hits, latency_ms=latency_ms, score_space=self.score_space))
        return results

    def _scan(self, query_vector: np.ndarray, rows: slice, k: int) -> tuple[list[int], dict[str, np.ndarray]]:
        """Score every memory in `rows` and pick the top k: their positions within
        `rows`, best first (ties by id), and the score and semantic arrays."""
        # `rows` is a slice, so these are views: nothing is copied per query.
        vectors = self._vectors[rows]
        if len(vectors) == 0:
            return [], {}
        score, semantic = scan(
            vectors,
            query_vector,
            created=self._created,
            anchored=self._anchored(),
            rows=rows,
            now=self._now().timestamp(),
            rate=recency_rate(self.half_life_hours),
            weights=self.weights,
        )
        if self.as_of is not None and hide_later(score, self._created[rows], self.as_of.timestamp()):
            return existing(top_k(score, self._ids[rows], k), score), {"score": score, "semantic": semantic}
        return top_k(score, self._ids[rows], k), {"score": score, "semantic": semantic}

    def _clock_count(self, rows: slice) -> ClockCount | None:
        """How many of the memories in `rows` the clock leaves out; None without a clock."""
        if self.as_of is None:
            return None
        created = self._created[rows]
        return ClockCount(self.as_of, int(np.count_nonzero(created > self.as_of.timestamp())), len(created))

    def clock_count(self) -> ClockCount | None:
        """The whole store's ClockCount (an evaluation's summary); None without a clock."""
        with self._lock:
            self._ensure_loaded()
            return self._clock_count(slice(None))

    def _rank(self, query_vector: np.ndarray, rows: slice, k: int) -> list[Hit]:
        best, columns = self._scan(query_vector, rows, k)
        return self._hits(rows, best, columns, self._texts([self._ids[rows][i] for i in best]))

    def _hits(
        self, rows: slice, best: list[int], columns: dict[str, np.ndarray], texts: dict[str, tuple[str, dict, str]]
    ) -> list[Hit]:
        """The hits at positions `best` within `rows`, from a scan's columns and the
        memories' (text, metadata, user) by id."""
        if not best:
            return []
        score, semantic = columns["score"], columns["semantic"]
        created = self._created[rows]
        importance = self._importance[rows]
        usage_count = self._usage[rows]
        usage = self._usage_component[rows]
        local_ids = self._ids[rows]
        now = self._now().timestamp()
        w = self.weights
        hits = []
        for rank, i in enumerate(best, start=1):
            memory_id = local_ids[i]
            text, metadata, user = texts[memory_id]
            # Recency for the k hits only: the scan never builds it per memory.
            seconds = max(now - float(created[i]), 0.0)
            hits.append(
                Hit(
                    memory_id=memory_id,
                    rank=rank,
                    text=text,
                    score=float(score[i]),
                    raw_score=float(score[i]),
                    breakdown={
                        "semantic": float(semantic[i]),
                        "recency": math.exp(-seconds * recency_rate(self.half_life_hours)),
                        "importance": float(importance[i]),
                        "usage": float(usage[i]),
                    },
                    weights=dict(w),
                    created_at=datetime.fromtimestamp(float(created[i]), tz=UTC),
                    metadata={
                        "user_id": user,
                        "usage_count": int(usage_count[i]),
                        "age_hours": round(seconds / 3600.0, 1),
                        **metadata,
                    },
                )
            )
        return hits

    def neighbours(self, text: str, *, user_id: str | None, k: int = 5) -> builtins.list[Neighbour]:
        """SupportsNeighbours: the user's k memories nearest to `text` by cosine
        similarity of the stored embeddings alone (ties by id); read-only."""
        if not text or not text.strip():
            raise InvalidRequest("The text is empty: type the memory you expected.")
        if k < 1:
            raise InvalidRequest(f"k must be at least 1, got {k}")
        query_vector = embedding.encode([text], model=self.model)[0]
        with self._lock:
            self._ensure_loaded()
            rows = slice(None) if user_id is None else self._by_user.get(user_id, slice(0, 0))
            similarity = self._vectors[rows] @ query_vector  # unit-length rows: the cosine
            ids = self._ids[rows]
            best = top_k(similarity, ids, k) if len(ids) else []
            texts = self._texts([ids[i] for i in best])
        return [Neighbour(ids[i], texts[ids[i]][0], float(similarity[i])) for i in best]

    def _texts(self, ids: list[str]) -> dict[str, tuple[str, dict, str]]:
        found: dict[str, tuple[str, dict, str]] = {}
        unique = list(dict.fromkeys(ids))
        # In parts: SQLite caps the parameters of one statement (999 in older builds).
        for start in range(0, len(unique), TEXT_READ_IDS):
            part = unique[start : start + TEXT_READ_IDS]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(f"SELECT id, text, metadata, user_id FROM memories WHERE id IN ({marks})", part)
            found.update((r[0], (r[1], json.loads(r[2]), r[3])) for r in rows)
        return found

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, text, user_id, created_at, importance, usage_count, metadata FROM memories WHERE id = ?",
                (memory_id,),
            ).fetchone()
        if row is None or (user_id is not None and row[2] != user_id):
            return None
        return self._memory(row)

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        sql = "SELECT id, text, user_id, created_at, importance, usage_count, metadata FROM memories"
        args: list[Any] = []
        if user_id is not None:
            sql += " WHERE user_id = ?"
            args.append(user_id)
        sql += " ORDER BY created_at DESC, id LIMIT ? OFFSET ?"
        args += [limit, offset]
        with self._lock:
            return [self._memory(r) for r in self._db.execute(sql, args).fetchall()]

    def users(self) -> builtins.list[str]:  # SupportsUsers (`list` here is the method above)
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT DISTINCT user_id FROM memories ORDER BY user_id")]

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM memories").fetchone()[0]

    @staticmethod
    def _memory(row: tuple) -> Memory:
        return Memory(
            memory_id=row[0],
            text=row[1],
            user_id=row[2],
            created_at=as_utc(datetime.fromisoformat(row[3])),
            importance=row[4],
            usage_count=row[5],
            metadata=json.loads(row[6]),
        )

    def feedback(self, memory_id: str, signal: str, *, comment: str | None = None) -> FeedbackResult:
        """Move importance: up for positive/retrieved, down for negative/ignored.

        A signal that agrees with the memory's previous ones moves it further (x1.5,
        x2, x2.5 after one, two, three agreeing signals); one that contradicts the
        last moves it half as far, so mixed evidence settles instead of swinging.
        """
        if signal not in SIGNALS:
            raise InvalidRequest(f"signal must be one of {', '.join(SIGNALS)}, got {signal!r}")
        if self.read_only:
            raise InvalidRequest(f"The embedded store at {self.path} is open read-only (its folder cannot be written)")
        step = FEEDBACK_STEP[signal]
        with self._lock:
            row = self._db.execute("SELECT importance FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None:
                raise NotFound(f"No memory with id {memory_id!r} in {self.path.name}")
            before = float(row[0])
            previous = [
                FEEDBACK_STEP[r[0]]
                for r in self._db.execute(
                    "SELECT signal FROM feedback WHERE memory_id = ? ORDER BY rowid DESC LIMIT 3", (memory_id,)
                )
            ]
            streak = 0
            for p in previous:
                if (p > 0) != (step > 0):
                    break
                streak += 1
            multiplier = 0.5 if previous and streak == 0 else 1 + 0.5 * streak
            after = min(IMPORTANCE_MAX, max(IMPORTANCE_MIN, before + step * multiplier))
            self._db.execute("UPDATE memories SET importance = ? WHERE id = ?", (after, memory_id))
            self._db.execute(
                "INSERT INTO feedback VALUES (?, ?, ?, ?, ?, ?)",
                (memory_id, signal, comment, before, after, self._now().isoformat()),
            )
            self._db.commit()
            self._dirty = True
        return FeedbackResult(
            memory_id=memory_id,
            signal=signal,
            importance_before=before,
            importance_after=after,
            adjustment=after - before,
            influenced_ranking=after != before,
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------ writing

    def import_jsonl(
        self,
        path: str | Path,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import memories from JSONL; bad lines are reported with their number and
        field, the good ones imported. Unchanged texts are not re-encoded."""
        report = ImportReport(source=str(path))
        try:
            # through the inbound boundary: a FIFO, /dev/zero or an outsized file is refused unread
            rows, report.issues = read_memories_file(path, self._now())
        except inbound.InboundError as exc:
            raise InvalidRequest(str(exc)) from None
        return self.import_rows(rows, report=report, progress=progress)

    def import_rows(
        self,
        rows: Iterable[dict[str, Any]],
        *,
        report: ImportReport | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        report = report or ImportReport(source="rows")
        rows = list(rows)
        # One lock across read, encode and write: two imports must not interleave
        # (imports are rare; a query waits for one to finish).
        with self._lock:
            known = dict(self._db.execute("SELECT id, text FROM memories WHERE model = ?", (self.model_name,)))
            # The same id twice in one file: the later line wins, as in an upsert.
            fresh = {r["id"]: r for r in rows}
            to_encode = [r for r in fresh.values() if known.get(r["id"]) != r["text"]]
            vectors = embedding.encode([r["text"] for r in to_encode], model=self.model, progress=progress)
            encoded = {r["id"]: vectors[i] for i, r in enumerate(to_encode)}
            existing = dict(
                self._db.execute("SELECT id, embedding FROM memories WHERE model = ?", (self.model_name,))
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r["id"],
                        r["user_id"],
                        r["text"],
                        as_utc(r["created_at"]).isoformat(),
                        r["importance"],
                        r["usage_count"],
                        json.dumps(r["metadata"]),
                        encoded[r["id"]].tobytes() if r["id"] in encoded else existing[r["id"]],
                        self.model_name,
                    )
                    for r in fresh.values()
                ],
            )
            self._db.commit()
            self._dirty = True
        report.imported += len(fresh)
        report.reencoded += len(to_encode)
        report.ids += list(fresh)
        return report

    def delete_except(self, keep_ids: builtins.list[str]) -> int:
        """Delete every memory whose id is not in `keep_ids`; returns how many."""
        with self._lock:
            self._db.execute("CREATE TEMP TABLE IF NOT EXISTS keep_ids (id TEXT PRIMARY KEY)")
            self._db.execute("DELETE FROM keep_ids")
            self._db.executemany("INSERT OR IGNORE INTO keep_ids VALUES (?)", [(i,) for i in keep_ids])
            deleted = self._db.execute("DELETE FROM memories WHERE id NOT IN (SELECT id FROM keep_ids)").rowcount
            self._db.commit()
            self._dirty = True
        return deleted

    @property
    def default_user(self) -> str | None:
        """HasDefaultUser: the user a page should preselect (the demo sets "sam")."""
        return self.meta("default_user")

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            self._db.commit()
