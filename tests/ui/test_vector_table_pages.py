"""The Inspect and Browse pages on a PostgreSQL + pgvector table (pgserver) and a
LanceDB folder, chosen and configured from the sidebar as a deployment would (the
connection URL from the environment, never shown)."""

from __future__ import annotations

import json

import lancedb
import numpy as np
import psycopg
import pytest
from demo_questions import THEME
from markdown_text import error_texts, seen
from pgvector_server import PgVectorServer

from connectors.demo_loader import demo_rows, demo_vectors

SEARCH = "FormSubmitter:query_form-Search"


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    rows, _ = demo_rows()
    vectors = demo_vectors(rows)
    server = PgVectorServer()
    url = server.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE memories (id text, user_id text, text text, created_at timestamptz, "
                     "metadata jsonb, embedding vector(384))")
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memories VALUES (%s, %s, %s, %s, %s, %s::vector)",
                [(r["id"], r["user_id"], r["text"], r["created_at"], json.dumps(r["metadata"]),
                  "[" + ",".join(map(str, v.tolist())) + "]") for r, v in zip(rows, vectors, strict=True)],
            )
    lance_dir = tmp_path_factory.mktemp("ui-lancedb")
    lancedb.connect(str(lance_dir)).create_table(
        "memories",
        data=[{"id": r["id"], "user_id": r["user_id"], "text": r["text"], "created_at": r["created_at"],
               "vector": v.astype(np.float32)} for r, v in zip(rows, vectors, strict=True)],
    )
    yield url, lance_dir
    server.stop()


@pytest.fixture
def stores_env(tables, monkeypatch):
    url, lance_dir = tables
    monkeypatch.setenv("MEMLENS_PGVECTOR_URL", url)
    monkeypatch.setenv("MEMLENS_PGVECTOR_TABLE", "memories")
    monkeypatch.setenv("MEMLENS_LANCEDB_PATH", str(lance_dir))
    return url


def shown_text(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success") for e in getattr(at, kind)]
    return "\n".join(seen(str(p)) for p in parts)


@pytest.mark.parametrize("store,raw_kind", [("pgvector", "cosine distance"), ("lancedb", "cosine distance")])
def test_inspect_ranks_the_theme_memory_first_with_the_raw_distance(app, stores_env, store, raw_kind):
    at = app(store=store, user="sam")
    at.run()
    at.text_input(key="query").input(THEME)
    at.button(key=SEARCH).click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    hits = at.dataframe[0].value
    assert hits.iloc[0]["memory id"] == "sam-02"
    assert list(hits["score"]) == sorted(hits["score"], reverse=True)
    assert list(hits["raw score"]) == sorted(hits["raw score"])
    assert any(raw_kind in info.value for info in at.info), [i.value for i in at.info]
    assert stores_env not in shown_text(at)  # the connection URL is a secret


def test_a_wrong_pgvector_setting_is_named_in_the_page(app, stores_env):
    at = app(store="pgvector", user="sam", cfg_pgvector_text_column="body")
    at.run()
    assert not at.exception, at.exception
    assert any("setting text_column = 'body'" in e for e in error_texts(at)), error_texts(at)
    assert stores_env not in shown_text(at)


def test_browse_lists_a_pgvector_users_memories(app, stores_env):
    at = app(store="pgvector", user="sam")
    at.switch_page("browse.py").run()
    assert not at.exception, at.exception
    listing = at.dataframe[0].value
    assert len(listing) == 22 and set(listing["user"]) == {"sam"}
