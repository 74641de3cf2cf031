"""The pgvector connector against a real PostgreSQL with pgvector (the pgserver
wheel): a described table of the demo memories, a table written by Mem0's own
pgvector backend and one written by LangGraph's PostgresStore, read through their
presets; distances, read-only SQL and settings errors."""

from __future__ import annotations

import json
import os
from typing import Any

import psycopg
import pytest
from demo_judgments import relevant_ids
from demo_questions import PIZZA, THEME
from pgvector_server import PgVectorServer  # tests/pgvector_server.py

from connectors.base import InvalidRequest, NotFound, ScoreKind, StoreTimeout, StoreUnavailable
from connectors.demo_loader import demo_rows, demo_vectors, load_mem0
from connectors.embedding import model_loader as embedding
from connectors.mem0.library import offline_config
from connectors.registry import REGISTRY, create_store
from connectors.vector.pgvector import normalise, open_store

THEME_ID = relevant_ids("demo-q04")[0]


def vector_literal(values) -> str:
    return "[" + ",".join(repr(float(x)) for x in values) + "]"


@pytest.fixture(scope="session")
def pg(tmp_path_factory):
    server = PgVectorServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def demo():
    rows, report = demo_rows()
    assert not report.issues, report.summary()
    return rows


@pytest.fixture(scope="session")
def memories_url(pg, demo):
    """A hand-made layout: memories(memory_id, owner, body, written_at, extra, emb)."""
    url = pg.new_database()
    vectors = demo_vectors(demo)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE memories (memory_id text PRIMARY KEY, owner text, body text, "
            "written_at timestamptz, extra jsonb, emb vector(384))"
        )
        conn.execute("CREATE TABLE wide (id text, text text, user_id text, embedding vector(3))")
        # a view that takes seconds per row: what a slow production table looks like
        conn.execute("CREATE VIEW slow AS SELECT m.* FROM memories m WHERE pg_sleep(3) IS NOT NULL")
        conn.execute("INSERT INTO wide VALUES ('w1', 'three dims', 'sam', '[1,0,0]')")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memories VALUES (%s, %s, %s, %s, %s, %s::vector)",
                [
                    (r["id"], r["user_id"], r["text"], r["created_at"], json.dumps(r["metadata"]), vector_literal(v))
                    for r, v in zip(demo, vectors, strict=True)
                ],
            )
    return url


def custom(url, **settings):
    layout: dict[str, Any] = dict(
        table="memories",
        id_column="memory_id",
        text_column="body",
        embedding_column="emb",
        user_column="owner",
        created_at_column="written_at",
        metadata_column="extra",
    )
    layout.update(settings)
    return open_store(url, **layout)


# ------------------------------------------------------------------ a described table


@pytest.mark.parametrize("operator", ["<=>", "<->", "<#>"])
def test_theme_question_puts_the_theme_memory_first(memories_url, operator):
    store = custom(memories_url, operator=operator)
    result = store.query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == THEME_ID
    assert result.hits[0].text == "Prefers light UI theme"
    assert {h.metadata["user_id"] for h in result.hits} == {"sam"}
    assert result.score_kind is ScoreKind.DISTANCE
    store.close()


@pytest.mark.parametrize("operator", ["<=>", "<->", "<#>"])
@pytest.mark.parametrize("question", [THEME, PIZZA])
def test_scores_follow_the_stores_own_order_and_keep_the_raw_distance(memories_url, operator, question):
    store = custom(memories_url, operator=operator)
    result = store.query(question, user_id="sam", k=10)
    raw = [h.raw_score for h in result.hits]
    assert len(raw) == 10 and raw == sorted(raw), "pgvector returns distances, nearest first"
    assert [h.rank for h in result.hits] == list(range(1, 11))
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert all(h.score == pytest.approx(normalise(operator, h.raw_score)) for h in result.hits)
    assert all(h.score != h.raw_score for h in result.hits)
    assert result.raw_score_kind in ("cosine distance (1 - cosine similarity)", "euclidean (L2) distance", "negative inner product")


def test_every_operator_gives_back_the_cosine_similarity(memories_url, demo):
    query = embedding.encode([THEME])[0]
    by_id = {r["id"]: v for r, v in zip(demo, demo_vectors(demo), strict=True)}
    for operator in ("<=>", "<->", "<#>"):
        for hit in custom(memories_url, operator=operator).query(THEME, user_id="sam", k=5).hits:
            assert hit.score == pytest.approx(float(query @ by_id[hit.memory_id]), abs=1e-4)


def test_pizza_scores_low_and_theme_scores_high(memories_url):
    store = custom(memories_url)
    assert store.query(PIZZA, user_id="sam", k=5).hits[0].score < 0.35
    assert store.query(THEME, user_id="sam", k=5).hits[0].score > 0.6


def test_get_list_and_users_read_the_layout(memories_url, demo):
    store = custom(memories_url)
    memory = store.get(THEME_ID, user_id="sam")
    assert memory.text == "Prefers light UI theme" and memory.user_id == "sam" and memory.created_at is not None
    assert store.get(THEME_ID, user_id="someone-else") is None
    sams = store.list(user_id="sam", limit=500)
    assert {m.memory_id for m in sams} == {r["id"] for r in demo if r["user_id"] == "sam"}
    assert store.users() == sorted({r["user_id"] for r in demo})


def test_the_connection_is_read_only_and_values_are_bound(memories_url):
    store = custom(memories_url)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        store.conn.execute("DELETE FROM memories")
    # a hostile user id is a value, not SQL
    assert store.query(THEME, user_id="sam' OR '1'='1", k=5).hits == []
    assert store.list(user_id="x'; DROP TABLE memories; --", limit=5) == []
    assert len(custom(memories_url).list(user_id="sam", limit=3)) == 3


def test_statement_timeout_is_set_on_the_connection(memories_url):
    store = custom(memories_url, timeout=2.5)
    assert store.conn.execute("SHOW statement_timeout").fetchone()[0] == "2500ms"


def test_a_query_past_the_statement_timeout_is_a_store_timeout(memories_url):
    with pytest.raises(StoreTimeout, match=r"no answer within the 1 s statement timeout"):
        custom(memories_url, table="slow", timeout=1)


@pytest.mark.parametrize(
    "settings,error,named",
    [
        ({"table": "no_such_table"}, NotFound, "setting table = 'no_such_table'"),
        ({"text_column": "content"}, InvalidRequest, "setting text_column = 'content'"),
        ({"embedding_column": "vec"}, InvalidRequest, "setting embedding_column = 'vec'"),
        ({"user_column": "user_id"}, InvalidRequest, "setting user_column = 'user_id'"),
        ({"embedding_column": "body"}, InvalidRequest, "setting embedding_column = 'body'"),
        ({"table": "memories; DROP TABLE memories"}, InvalidRequest, "setting table"),
        ({"operator": "<~>"}, InvalidRequest, "setting operator"),
        ({"preset": "llamaindex"}, InvalidRequest, "setting preset"),
    ],
)
def test_bad_settings_name_the_setting(memories_url, settings, error, named):
    with pytest.raises(error) as raised:
        custom(memories_url, **settings)
    assert named in str(raised.value)
    assert "postgres:" not in str(raised.value)  # the URL never reaches a message


def test_wrong_dimension_names_the_embedding_setting_and_the_model(memories_url):
    store = open_store(memories_url, table="wide", embedding_column="embedding", metadata_column="-", created_at_column="-")
    with pytest.raises(InvalidRequest, match=r"setting embedding_column = 'embedding' holds 3-dimension vectors but model"):
        store.query(THEME, user_id="sam", k=5)


def test_unreachable_server_is_store_unavailable_without_the_url():
    with pytest.raises(StoreUnavailable) as raised:
        open_store("postgresql://memlens:s3cret@127.0.0.1:1/nowhere", table="memories", timeout=1)
    assert "s3cret" not in str(raised.value)


def test_registry_opens_it_with_the_url_as_a_secret(memories_url):
    spec = REGISTRY["pgvector"]
    assert next(f for f in spec.fields if f.name == "url").kind == "secret"
    store = create_store(
        "pgvector",
        {"url": memories_url, "table": "memories", "id_column": "memory_id", "text_column": "body",
         "embedding_column": "emb", "user_column": "owner", "created_at_column": "written_at",
         "metadata_column": "extra"},
    )
    assert store.query(THEME, user_id="sam", k=1).hits[0].memory_id == THEME_ID


# ------------------------------------------------------------------ presets


@pytest.fixture(scope="session")
def mem0_url(pg, demo, tmp_path_factory):
    """A table written by Mem0's own pgvector backend (infer=False, the packaged MiniLM)."""
    url = pg.new_database()
    root = tmp_path_factory.mktemp("mem0-pg")
    os.environ.setdefault("MEM0_DIR", str(root / "mem0-dir"))
    from mem0 import Memory

    config = offline_config(
        {
            "vector_store": {"provider": "pgvector", "config": {"connection_string": url, "collection_name": "mem0"}},
            "embedder": {"provider": "huggingface", "config": {"model": embedding.packaged_model_path()}},
            "history_db_path": str(root / "history.db"),
        }
    )
    memory = Memory.from_config(config)
    ids = load_mem0(memory, [r for r in demo if r["user_id"] == "sam"])
    return url, ids


def test_mem0_pgvector_table_read_through_the_mem0_preset(mem0_url):
    url, ids = mem0_url
    store = open_store(url, preset="mem0")
    result = store.query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == ids[THEME_ID]
    assert result.hits[0].text == "Prefers light UI theme"
    assert result.hits[0].metadata["memory_id"] == THEME_ID
    raw = [h.raw_score for h in result.hits]
    assert raw == sorted(raw) and result.hits[0].score == pytest.approx(1 - raw[0])
    assert result.hits[0].created_at is not None
    assert store.get(ids[THEME_ID]).text == "Prefers light UI theme"
    assert store.users() == ["sam"]


@pytest.fixture(scope="session")
def langgraph_url(pg, demo):
    """A table written by LangGraph's PostgresStore with the real MiniLM as its embedder."""
    from langgraph.store.postgres import PostgresStore
    from langgraph.store.postgres.base import PostgresIndexConfig

    url = pg.new_database()
    index: PostgresIndexConfig = {
        "dims": embedding.DIMENSIONS,
        "embed": lambda texts: embedding.encode(texts).tolist(),
        "fields": ["text"],
    }
    with PostgresStore.from_conn_string(url, index=index) as store:
        store.setup()
        for row in demo:
            store.put(("memories", row["user_id"]), row["id"], {"text": row["text"]})
        own = store.search(("memories", "sam"), query=THEME, limit=5)
    return url, [(item.key, item.score) for item in own]


def test_langgraph_postgres_store_read_through_the_langgraph_preset(langgraph_url, demo):
    url, own = langgraph_url
    store = open_store(url, preset="langgraph")
    result = store.query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == THEME_ID
    assert result.hits[0].text == "Prefers light UI theme"
    # LangGraph's own search, same order, and its cosine scores are ours
    assert [h.memory_id for h in result.hits] == [key for key, _ in own]
    assert [h.score for h in result.hits] == pytest.approx([score for _, score in own], abs=1e-4)
    assert {m.user_id for m in store.list(user_id="sam", limit=500)} == {"sam"}
    assert set(store.users()) == {r["user_id"] for r in demo}
