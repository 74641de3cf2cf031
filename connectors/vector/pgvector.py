"""A PostgreSQL table (or view) of memories with a pgvector embedding column.

One connector covers every layout that keeps memories in a pgvector table (Mem0's
pgvector backend, LangGraph's ``PostgresStore``, LlamaIndex's ``PGVectorStore``, ...):
the settings name the table and which column holds what. A column setting is either
a column name (``created_at``) or ``column.key`` for a key of a JSONB column
(``payload.data`` reads ``payload->>'data'``). When the embeddings live in a second
table (LangGraph keeps them in ``store_vectors``), ``vector_table`` names it and
``join_columns`` the columns both tables share.

The query is embedded with the model the table was built with (the packaged
all-MiniLM-L6-v2 unless configured) and ordered by the chosen operator, nearest
first; each distance becomes a higher-is-better score, the raw value kept:

    <=>   cosine distance (1 - cosine similarity)   -> 1 - d
    <->   euclidean (L2) distance                   -> 1 - d² / 2
    <#>   negative inner product                    -> -d

For unit-length embeddings all three give back the cosine similarity, so one floor
means the same whichever operator the table's index uses.

Safety: the connection is read-only (``default_transaction_read_only``) with a
statement timeout; every value is a bound parameter and every identifier is quoted
by ``psycopg.sql``. The connection URL is a secret and never appears in a message.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any

from connectors.base import (
    COSINE_DISTANCE,
    BadResponse,
    Hit,
    InvalidRequest,
    Memory,
    NotFound,
    QueryResult,
    ScoreKind,
    StoreTimeout,
    StoreUnavailable,
    as_datetime,
    check_query,
    distance_hit,
    score_from_distance,
    unit_length_note,
)
from connectors.common.score_spaces import DISTANCE_RULES, ScoreSpace, space_for
from connectors.embedding.query_vectors import query_vector

OPERATORS = {
    "<=>": "cosine distance (1 - cosine similarity)",
    "<->": "euclidean (L2) distance",
    "<#>": "negative inner product",
}
USERS_SCAN_LIMIT = 10_000
# LangGraph indexes several fields of one item as separate rows: fetch more and keep
# each id's nearest row, as LangGraph's own search does.
JOIN_OVERFETCH = 4


FORMULAS = DISTANCE_RULES["pgvector"]  # connectors/common/score_spaces.py: the one table of rules


def normalise(operator: str, distance: float | None) -> float | None:
    """Higher-is-better score for a pgvector distance (see the module docstring)."""
    return score_from_distance(FORMULAS.get(operator, COSINE_DISTANCE), distance)


@dataclass(frozen=True)
class Layout:
    """Which table and columns hold a memory; empty means "not stored"."""

    table: str = "memories"
    id_column: str = "id"
    text_column: str = "text"
    embedding_column: str = "embedding"
    user_column: str = "user_id"
    user_value: str = "{user_id}"  # what the user column holds for an end user
    created_at_column: str = "created_at"
    metadata_column: str = "metadata"
    vector_table: str = ""
    join_columns: str = ""
    operator: str = "<=>"


PRESETS: dict[str, Layout] = {
    "custom": Layout(),
    # Mem0's pgvector backend: one table named after `collection_name`, columns
    # id / vector / payload (JSONB with data, user_id, created_at, hash, ...).
    "mem0": Layout(
        table="mem0",
        id_column="id",
        text_column="payload.data",
        embedding_column="vector",
        user_column="payload.user_id",
        created_at_column="payload.created_at",
        metadata_column="payload",
    ),
    # LangGraph's PostgresStore: items in `store` (prefix = the namespace joined by
    # dots, key, value JSONB), one embedding per indexed field in `store_vectors`.
    "langgraph": Layout(
        table="store",
        id_column="key",
        text_column="value.text",
        embedding_column="embedding",
        user_column="prefix",
        user_value="memories.{user_id}",
        created_at_column="created_at",
        metadata_column="value",
        vector_table="store_vectors",
        join_columns="prefix,key",
    ),
}

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


def _sql():
    try:
        import psycopg
        from psycopg import sql
    except ImportError as exc:
        raise StoreUnavailable("psycopg is not installed: `pip install 'memlens[pgvector]'`.") from exc
    return psycopg, sql


def _table_identifier(setting: str, value: str):
    """`table` or `schema.table` as a quoted identifier; anything else is refused."""
    _, sql = _sql()
    parts = value.split(".")
    if not value or len(parts) > 2 or not all(_IDENT.match(p) for p in parts):
        raise InvalidRequest(f"pgvector: setting {setting} = {value!r} is not a table name (table or schema.table)")
    return sql.Identifier(*parts)


class PgVectorStore:
    """One pgvector table read through a described layout, read-only."""

    name = "pgvector"
    score_kind = ScoreKind.DISTANCE

    def __init__(
        self,
        url: str,
        layout: Layout,
        *,
        model: str | None = None,
        timeout: float = 10.0,
        connection: Any = None,
    ):
        if layout.operator not in OPERATORS:
            raise InvalidRequest(f"pgvector: setting operator = {layout.operator!r}; use one of {', '.join(OPERATORS)}")
        self.layout = layout
        self.model = model or None
        self.raw_score_kind = OPERATORS[layout.operator]
        self.timeout = float(timeout)
        psycopg, self._sql = _sql()
        self._psycopg = psycopg
        if connection is None:
            if not url:
                raise InvalidRequest("pgvector: give the connection URL (setting url).")
            try:
                connection = psycopg.connect(
                    url,
                    autocommit=True,
                    connect_timeout=max(1, int(self.timeout)),
                    options=f"-c statement_timeout={int(self.timeout * 1000)} -c default_transaction_read_only=on",
                )
            except psycopg.Error as exc:
                # The URL may hold a password: say what failed, never echo it.
                raise StoreUnavailable(f"pgvector: cannot connect to PostgreSQL ({type(exc).__name__})") from exc
        self.conn = connection
        self._columns = self._build_columns()
        self._stored_dims: int | None = None
        self._check_layout()

    # ----------------------------------------------------------- SQL pieces

    def _column(self, setting: str, alias: str):
        """The SQL for a column setting on table `alias` (t: items, v: vectors)."""
        sql = self._sql
        value = getattr(self.layout, setting)
        if not value:
            return None
        column, _, key = value.partition(".")
        if not _IDENT.match(column):
            raise InvalidRequest(f"pgvector: setting {setting} = {value!r} is not a column name (column or column.key)")
        ref = sql.Identifier(alias, column)
        return sql.SQL("({} ->> {})").format(ref, sql.Literal(key)) if key else ref

    def _build_columns(self) -> dict[str, Any]:
        vector_alias = "v" if self.layout.vector_table else "t"
        columns = {
            "id_column": self._column("id_column", "t"),
            "text_column": self._column("text_column", "t"),
            "embedding_column": self._column("embedding_column", vector_alias),
            "user_column": self._column("user_column", "t"),
            "created_at_column": self._column("created_at_column", "t"),
            "metadata_column": self._column("metadata_column", "t"),
        }
        for required in ("id_column", "text_column", "embedding_column"):
            if columns[required] is None:
                raise InvalidRequest(f"pgvector: setting {required} is required")
        return columns

    def _from(self):
        sql = self._sql
        table = sql.SQL("{} AS t").format(_table_identifier("table", self.layout.table))
        if not self.layout.vector_table:
            return table
        joins = [c.strip() for c in self.layout.join_columns.split(",") if c.strip()]
        if not joins or not all(_IDENT.match(c) for c in joins):
            raise InvalidRequest(
                f"pgvector: setting join_columns = {self.layout.join_columns!r} must list the columns "
                "both tables share, comma-separated"
            )
        on = sql.SQL(" AND ").join(
            sql.SQL("{} = {}").format(sql.Identifier("t", c), sql.Identifier("v", c)) for c in joins
        )
        return sql.SQL("{} JOIN {} AS v ON {}").format(
            table, _table_identifier("vector_table", self.layout.vector_table), on
        )

    def _select_list(self):
        sql = self._sql
        parts = []
        for setting in ("id_column", "text_column", "user_column", "created_at_column", "metadata_column"):
            column = self._columns[setting]
            parts.append(sql.SQL("{}").format(column) if column is not None else sql.SQL("NULL"))
        return sql.SQL(", ").join(parts)

    def _user_filter(self, user_id: str | None):
        sql = self._sql
        if not user_id or self._columns["user_column"] is None:
            return sql.SQL("TRUE"), []
        value = self.layout.user_value.replace("{user_id}", user_id)
        return sql.SQL("{}::text = %s").format(self._columns["user_column"]), [value]

    def _execute(self, what: str, statement, params: list | tuple = ()) -> list[tuple]:
        psycopg = self._psycopg
        errors = psycopg.errors
        try:
            with self.conn.cursor() as cursor:
                cursor.execute(statement, params)
                return cursor.fetchall()
        except errors.UndefinedTable as exc:
            setting = "vector_table" if self.layout.vector_table and self.layout.vector_table in str(exc) else "table"
            raise NotFound(
                f"pgvector: setting {setting} = {getattr(self.layout, setting)!r}: no such table or view"
            ) from exc
        except errors.UndefinedColumn as exc:
            raise InvalidRequest(f"pgvector: {self._which_column(str(exc))}") from exc
        except errors.QueryCanceled as exc:
            raise StoreTimeout(f"pgvector {what}: no answer within the {self.timeout:g} s statement timeout") from exc
        except errors.DataException as exc:
            if "dimension" in str(exc):
                raise InvalidRequest(self._dimension_message()) from exc
            raise BadResponse(f"pgvector {what} failed: {str(exc).splitlines()[0][:300]}") from exc
        except errors.UndefinedFunction as exc:
            raise InvalidRequest(
                f"pgvector: setting embedding_column = {self.layout.embedding_column!r} is not a pgvector column "
                f"(operator {self.layout.operator} does not apply: {str(exc).splitlines()[0][:200]})"
            ) from exc
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"pgvector {what}: the connection failed ({type(exc).__name__})") from exc
        except psycopg.Error as exc:
            raise BadResponse(f"pgvector {what} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}") from exc

    def _which_column(self, message: str) -> str:
        """Name the setting whose column PostgreSQL could not find."""
        found = re.search(r'column (?:\w+\.)?"?([^"\s]+)"? does not exist', message)
        missing = found.group(1) if found else ""
        for setting in ("id_column", "text_column", "embedding_column", "user_column", "created_at_column", "metadata_column"):
            value = getattr(self.layout, setting)
            if value and value.partition(".")[0] == missing:
                return f"setting {setting} = {value!r}: no column {missing!r} in {self.layout.table!r}"
        return message.splitlines()[0][:300]

    def _dimension_message(self, query_dims: int | None = None) -> str:
        stored = self._stored_dims
        model = self.model or "all-MiniLM-L6-v2"
        detail = f" holds {stored}-dimension vectors" if stored else " holds vectors of another dimension"
        if query_dims:
            detail += f" but model {model!r} makes {query_dims}-dimension ones"
        return f"pgvector: setting embedding_column = {self.layout.embedding_column!r}{detail}: set model to the one the table was built with"

    def _check_layout(self) -> None:
        """Fail at open, naming the setting, when the table or a column is missing."""
        sql = self._sql
        statement = sql.SQL("SELECT {}, vector_dims({}) FROM {} LIMIT 1").format(
            self._select_list(), self._columns["embedding_column"], self._from()
        )
        rows = self._execute("open", statement)
        if rows:
            self._stored_dims = rows[0][-1]

    # -------------------------------------------------------------- protocol

    @property
    def score_space(self) -> ScoreSpace:
        """HasScoreSpace: the rule its index's operator gives (connectors/common/score_spaces.py)."""
        return space_for(self.name, self.layout.operator)

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        sql = self._sql
        started = time.perf_counter()
        vector = query_vector(text, self.model)
        if self._stored_dims and len(vector) != self._stored_dims:
            raise InvalidRequest(self._dimension_message(len(vector)))
        where, params = self._user_filter(user_id)
        distance = sql.SQL("({} {} %s::vector)").format(self._columns["embedding_column"], sql.SQL(self.layout.operator))
        limit = int(k) * (JOIN_OVERFETCH if self.layout.vector_table else 1)
        statement = sql.SQL("SELECT {}, {} AS distance FROM {} WHERE {} ORDER BY distance LIMIT %s").format(
            self._select_list(), distance, self._from(), where
        )
        literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
        rows = self._execute("query", statement, [literal, *params, limit])
        latency_ms = (time.perf_counter() - started) * 1000
        hits: list[Hit] = []
        seen: set[str] = set()
        for row in rows:
            memory = self._memory(row)
            if memory.memory_id in seen:
                continue
            seen.add(memory.memory_id)
            hits.append(
                distance_hit(
                    len(hits) + 1,
                    row[-1],
                    FORMULAS.get(self.layout.operator, COSINE_DISTANCE),
                    memory_id=memory.memory_id,
                    text=memory.text,
                    created_at=memory.created_at,
                    metadata={**memory.metadata, "user_id": memory.user_id} if memory.user_id else memory.metadata,
                )
            )
            if len(hits) == k:
                break
        notes = [] if self.layout.operator == "<=>" else [unit_length_note(f"This table is ordered by {self.raw_score_kind}", "table")]
        raw_body = {
            "table": self.layout.table,
            "operator": self.layout.operator,
            "rows": [{"id": h.memory_id, "distance": h.raw_score} for h in hits],
        }
        return QueryResult.listing(
            text, hits, latency_ms=latency_ms, raw=raw_body, notes=notes,
            score_kind=ScoreKind.DISTANCE, raw_score_kind=self.raw_score_kind, score_space=self.score_space,
        )

    def _memory(self, row: tuple) -> Memory:
        memory_id, text, user, created, metadata = row[:5]
        user_id = None if user is None else str(user)
        prefix = self.layout.user_value.split("{user_id}")[0]
        if user_id and prefix and user_id.startswith(prefix):
            user_id = user_id[len(prefix) :]  # "memories.sam" -> "sam"
        return Memory(
            memory_id=str(memory_id),
            text="" if text is None else str(text),
            user_id=user_id,
            created_at=created if hasattr(created, "tzinfo") else as_datetime(created),
            metadata=dict(metadata) if isinstance(metadata, dict) else {},
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        sql = self._sql
        where, params = self._user_filter(user_id)
        statement = sql.SQL("SELECT {} FROM {} WHERE {}::text = %s AND {} LIMIT 1").format(
            self._select_list(), _table_identifier("table", self.layout.table) + sql.SQL(" AS t"),
            self._columns["id_column"], where,
        )
        rows = self._execute("get", statement, [memory_id, *params])
        return self._memory(rows[0]) if rows else None

    def users(self) -> list[str]:
        if self._columns["user_column"] is None:
            return []
        sql = self._sql
        statement = sql.SQL("SELECT DISTINCT {}::text FROM {} LIMIT %s").format(
            self._columns["user_column"], _table_identifier("table", self.layout.table) + sql.SQL(" AS t")
        )
        prefix = self.layout.user_value.split("{user_id}")[0]
        found = {str(r[0]) for r in self._execute("users", statement, [USERS_SCAN_LIMIT]) if r[0] is not None}
        return sorted(u[len(prefix):] if prefix and u.startswith(prefix) else u for u in found)

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        sql = self._sql
        where, params = self._user_filter(user_id)
        statement = sql.SQL("SELECT {} FROM {} WHERE {} ORDER BY {} LIMIT %s OFFSET %s").format(
            self._select_list(), _table_identifier("table", self.layout.table) + sql.SQL(" AS t"),
            where, self._columns["id_column"],
        )
        return [self._memory(r) for r in self._execute("list", statement, [*params, int(limit), int(offset)])]

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # closing a broken connection must not hide the real error
            pass


def open_store(
    url: str = "",
    preset: str = "custom",
    table: str = "",
    id_column: str = "",
    text_column: str = "",
    embedding_column: str = "",
    user_column: str = "",
    user_value: str = "",
    created_at_column: str = "",
    metadata_column: str = "",
    vector_table: str = "",
    join_columns: str = "",
    operator: str = "",
    model: str | None = None,
    timeout: float = 10.0,
) -> PgVectorStore:
    """Registry factory: the preset's layout, with every non-empty setting overriding it.

    A column set to ``-`` means "this table has no such column" (e.g. no user column)."""
    if preset not in PRESETS:
        raise InvalidRequest(f"pgvector: setting preset = {preset!r}; use one of {', '.join(PRESETS)}")
    overrides = {
        name: value
        for name, value in {
            "table": table,
            "id_column": id_column,
            "text_column": text_column,
            "embedding_column": embedding_column,
            "user_column": user_column,
            "user_value": user_value,
            "created_at_column": created_at_column,
            "metadata_column": metadata_column,
            "vector_table": vector_table,
            "join_columns": join_columns,
            "operator": operator,
        }.items()
        if value
    }
    overrides = {name: ("" if value == "-" else str(value).strip()) for name, value in overrides.items()}
    layout = replace(PRESETS[preset], **overrides)
    return PgVectorStore(url, layout, model=model or None, timeout=float(timeout or 10.0))
