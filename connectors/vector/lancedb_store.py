"""A LanceDB table of memories in a local database folder (LanceDB runs embedded).

The query is embedded with the model the table was built with (the packaged
all-MiniLM-L6-v2 unless configured) and searched with
``table.search(vector).distance_type(...)``; LanceDB returns ``_distance``, lower is
better, which becomes a higher-is-better score with the raw value kept:

    l2       squared euclidean distance   -> 1 - d / 2
    cosine   1 - cosine similarity        -> 1 - d
    dot      1 - dot product              -> 1 - d

For unit-length embeddings all three give back the cosine similarity. Pick the
distance type the table's index was built with, or LanceDB scans with another one.

Filters are LanceDB SQL strings: a column name is checked against the table's schema
and quoted with backticks, a user id is a string literal with its quotes doubled.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from connectors.base import (
    InvalidRequest,
    Memory,
    NotFound,
    QueryResult,
    ScoreKind,
    StoreUnavailable,
    as_datetime,
    check_query,
    distance_hit,
    score_from_distance,
    unit_length_note,
)
from connectors.common.failures import call_library
from connectors.common.score_spaces import DISTANCE_RULES, ScoreSpace, space_for
from connectors.embedding.query_vectors import query_vector

RAW_KINDS = {
    "l2": "squared l2 distance",
    "cosine": "cosine distance (1 - cosine similarity)",
    "dot": "dot distance (1 - dot product)",
}
USERS_SCAN_LIMIT = 10_000
COLUMN_SETTINGS = ("id_column", "text_column", "vector_column", "user_column", "created_at_column")


FORMULAS = DISTANCE_RULES["lancedb"]  # connectors/common/score_spaces.py: the one table of rules


def normalise(distance_type: str, distance: float | None) -> float | None:
    """Higher-is-better score for a LanceDB ``_distance`` (see the module docstring)."""
    return score_from_distance(FORMULAS[distance_type], distance)


def _literal(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


class LanceDBStore:
    """One table of a local LanceDB folder, read-only."""

    name = "lancedb"
    score_kind = ScoreKind.DISTANCE

    def __init__(
        self,
        path: str | Path,
        table: str = "memories",
        *,
        id_column: str = "id",
        text_column: str = "text",
        vector_column: str = "vector",
        user_column: str = "user_id",
        created_at_column: str = "created_at",
        distance_type: str = "cosine",
        model: str | None = None,
    ):
        if distance_type not in RAW_KINDS:
            raise InvalidRequest(f"LanceDB: setting distance_type = {distance_type!r}; use one of {', '.join(RAW_KINDS)}")
        if not path:
            raise InvalidRequest("LanceDB: give the database folder (setting path).")
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise StoreUnavailable(f"LanceDB: setting path = {str(path)!r}: no such folder")
        try:
            import lancedb
        except ImportError as exc:
            raise StoreUnavailable("LanceDB is not installed: `pip install 'memlens[lancedb]'`.") from exc
        self.distance_type = distance_type
        self.raw_score_kind = RAW_KINDS[distance_type]
        self.model = model or None
        self.table_name = table
        self.location = str(folder)
        self.columns = {
            "id_column": id_column,
            "text_column": text_column,
            "vector_column": vector_column,
            "user_column": user_column or "",
            "created_at_column": created_at_column or "",
        }
        try:
            self.db = lancedb.connect(str(folder))
            self.table = self.db.open_table(table)
        except (ValueError, FileNotFoundError) as exc:
            raise NotFound(f"LanceDB: setting table = {table!r}: no such table in {folder}") from exc
        except Exception as exc:
            raise StoreUnavailable(f"LanceDB: cannot open {folder}: {type(exc).__name__}: {exc}") from exc
        self.dims = self._check_columns()

    def _check_columns(self) -> int | None:
        """Every named column exists and the vector column is a fixed-size list: the
        error names the setting and lists the columns the table has."""
        schema = self.table.schema
        names = set(schema.names)
        for setting in COLUMN_SETTINGS:
            column = self.columns[setting]
            if column and column not in names:
                raise InvalidRequest(
                    f"LanceDB: setting {setting} = {column!r}: table {self.table_name!r} has no such column "
                    f"(it has: {', '.join(schema.names)})"
                )
        vector_type = schema.field(self.columns["vector_column"]).type
        size = getattr(vector_type, "list_size", None)
        if size is None:
            raise InvalidRequest(
                f"LanceDB: setting vector_column = {self.columns['vector_column']!r} is a {vector_type}, not a vector column"
            )
        return int(size)

    def _user_filter(self, user_id: str | None) -> str | None:
        column = self.columns["user_column"]
        return f"`{column}` = {_literal(user_id)}" if user_id and column else None

    def _call(self, what: str, fn, *args, **kwargs):
        """Run one LanceDB call, its failure translated by type (connectors/common/failures.py)."""
        return call_library("LanceDB", f"{what} on {self.table_name!r}", self.location, fn, *args, **kwargs)

    def _memory(self, row: dict[str, Any]) -> Memory:
        user_column, created_column = self.columns["user_column"], self.columns["created_at_column"]
        created = row.get(created_column) if created_column else None
        skip = {self.columns["vector_column"], "_distance"}
        return Memory(
            memory_id=str(row[self.columns["id_column"]]),
            text="" if row.get(self.columns["text_column"]) is None else str(row[self.columns["text_column"]]),
            user_id=None if not user_column or row.get(user_column) is None else str(row[user_column]),
            created_at=created if hasattr(created, "tzinfo") else as_datetime(created),
            metadata={k: v for k, v in row.items() if k not in skip and not hasattr(v, "tzinfo")},
        )

    # -------------------------------------------------------------- protocol

    @property
    def score_space(self) -> ScoreSpace:
        """HasScoreSpace: the rule its table's distance type gives (connectors/common/score_spaces.py)."""
        return space_for(self.name, self.distance_type)

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        started = time.perf_counter()
        vector = query_vector(text, self.model)
        if self.dims and len(vector) != self.dims:
            raise InvalidRequest(
                f"LanceDB: setting vector_column = {self.columns['vector_column']!r} holds {self.dims}-dimension "
                f"vectors but model {self.model or 'all-MiniLM-L6-v2'!r} makes {len(vector)}-dimension ones: "
                "set model to the one the table was built with"
            )

        def search() -> list[dict[str, Any]]:
            builder: Any = self.table.search(vector, vector_column_name=self.columns["vector_column"])
            builder = builder.distance_type(self.distance_type)
            where = self._user_filter(user_id)
            if where:
                builder = builder.where(where, prefilter=True)
            return builder.limit(int(k)).to_list()

        rows = self._call("search", search)
        latency_ms = (time.perf_counter() - started) * 1000
        hits = []
        for rank, row in enumerate(rows, 1):
            memory = self._memory(row)
            hits.append(
                distance_hit(
                    rank,
                    row.get("_distance"),
                    FORMULAS[self.distance_type],
                    memory_id=memory.memory_id,
                    text=memory.text,
                    created_at=memory.created_at,
                    metadata=memory.metadata,
                )
            )
        notes = [] if self.distance_type == "cosine" else [unit_length_note(f"This table is searched by {self.raw_score_kind}", "table")]
        raw_body = {
            "table": self.table_name,
            "distance_type": self.distance_type,
            "rows": [{"id": h.memory_id, "_distance": h.raw_score} for h in hits],
        }
        return QueryResult.listing(
            text, hits, latency_ms=latency_ms, raw=raw_body, notes=notes,
            score_kind=ScoreKind.DISTANCE, raw_score_kind=self.raw_score_kind, score_space=self.score_space,
        )

    def _scan(self, where: str | None, limit: int, offset: int = 0) -> list[dict[str, Any]]:
        def scan():
            builder = self.table.search()
            if where:
                builder = builder.where(where)
            return builder.limit(int(limit)).offset(int(offset)).to_list()

        return self._call("scan", scan)

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        conditions = [f"`{self.columns['id_column']}` = {_literal(memory_id)}"]
        if (user_filter := self._user_filter(user_id)) is not None:
            conditions.append(user_filter)
        rows = self._scan(" AND ".join(conditions), 1)
        return self._memory(rows[0]) if rows else None

    def users(self) -> list[str]:
        column = self.columns["user_column"]
        if not column:
            return []
        rows = self._call("users", lambda: self.table.search().select([column]).limit(USERS_SCAN_LIMIT).to_list())
        return sorted({str(r[column]) for r in rows if r.get(column) is not None})

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        return [self._memory(row) for row in self._scan(self._user_filter(user_id), limit, offset)]

    def close(self) -> None:
        pass  # LanceDB holds no connection to release


def open_store(
    path: str = "",
    table: str = "memories",
    id_column: str = "id",
    text_column: str = "text",
    vector_column: str = "vector",
    user_column: str = "user_id",
    created_at_column: str = "created_at",
    distance_type: str = "cosine",
    model: str | None = None,
) -> LanceDBStore:
    """Registry factory."""
    return LanceDBStore(
        path,
        table or "memories",
        id_column=id_column or "id",
        text_column=text_column or "text",
        vector_column=vector_column or "vector",
        user_column=user_column,
        created_at_column=created_at_column,
        distance_type=distance_type or "cosine",
        model=model or None,
    )
