"""The LanceDB connector against a real local LanceDB folder holding the demo
memories with MiniLM embeddings: ranking, the three distance types, filters and
settings errors."""

from __future__ import annotations

import lancedb
import numpy as np
import pytest
from demo_judgments import relevant_ids
from demo_questions import PIZZA, THEME

from connectors.base import InvalidRequest, NotFound, ScoreKind, StoreUnavailable
from connectors.demo_loader import demo_rows, demo_vectors
from connectors.embedding import model_loader as embedding
from connectors.registry import create_store
from connectors.vector.lancedb_store import normalise, open_store

THEME_ID = relevant_ids("demo-q04")[0]
DISTANCES = ("cosine", "l2", "dot")


@pytest.fixture(scope="module")
def demo():
    rows, report = demo_rows()
    assert not report.issues, report.summary()
    return rows


@pytest.fixture(scope="module")
def folder(tmp_path_factory, demo):
    path = tmp_path_factory.mktemp("lancedb")
    db = lancedb.connect(str(path))
    vectors = demo_vectors(demo)
    db.create_table(
        "memories",
        data=[
            {"memory_id": r["id"], "user_id": r["user_id"], "content": r["text"], "created_at": r["created_at"],
             "embedding": v.astype(np.float32)}
            for r, v in zip(demo, vectors, strict=True)
        ],
    )
    db.create_table("small", data=[{"id": "s1", "text": "three dims", "user_id": "sam", "vector": [1.0, 0.0, 0.0]}])
    return path


def store(folder, **settings):
    return open_store(
        str(folder), **{"table": "memories", "id_column": "memory_id", "text_column": "content",
                        "vector_column": "embedding", **settings}
    )


@pytest.mark.parametrize("distance_type", DISTANCES)
def test_theme_question_puts_the_theme_memory_first(folder, distance_type):
    result = store(folder, distance_type=distance_type).query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == THEME_ID
    assert result.hits[0].text == "Prefers light UI theme"
    assert {h.metadata["user_id"] for h in result.hits} == {"sam"}
    assert result.score_kind is ScoreKind.DISTANCE


@pytest.mark.parametrize("distance_type", DISTANCES)
@pytest.mark.parametrize("question", [THEME, PIZZA])
def test_scores_follow_the_stores_own_order_and_keep_the_raw_distance(folder, distance_type, question):
    result = store(folder, distance_type=distance_type).query(question, user_id="sam", k=10)
    raw = [h.raw_score for h in result.hits]
    assert len(raw) == 10 and raw == sorted(raw)
    assert [h.rank for h in result.hits] == list(range(1, 11))
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert all(h.score == pytest.approx(normalise(distance_type, h.raw_score)) for h in result.hits)
    assert all(h.score != h.raw_score for h in result.hits)
    assert "distance" in result.raw_score_kind


def test_every_distance_type_gives_back_the_cosine_similarity(folder, demo):
    by_id = {r["id"]: v for r, v in zip(demo, demo_vectors(demo), strict=True)}
    query = embedding.encode([THEME])[0]
    for distance_type in DISTANCES:
        for hit in store(folder, distance_type=distance_type).query(THEME, user_id="sam", k=5).hits:
            assert hit.score == pytest.approx(float(query @ by_id[hit.memory_id]), abs=1e-4)


def test_pizza_scores_low_and_theme_scores_high(folder):
    assert store(folder).query(PIZZA, user_id="sam", k=5).hits[0].score < 0.35
    assert store(folder).query(THEME, user_id="sam", k=5).hits[0].score > 0.6


def test_get_list_users_and_quoted_filters(folder, demo):
    lance = store(folder)
    memory = lance.get(THEME_ID, user_id="sam")
    assert memory.text == "Prefers light UI theme" and memory.user_id == "sam" and memory.created_at is not None
    assert lance.get(THEME_ID, user_id="leo") is None
    assert {m.memory_id for m in lance.list(user_id="sam", limit=500)} == {r["id"] for r in demo if r["user_id"] == "sam"}
    assert lance.users() == sorted({r["user_id"] for r in demo})
    # a quote in a user id is part of the value, not of the filter
    assert lance.query(THEME, user_id="sam' OR '1'='1", k=5).hits == []
    assert lance.get(THEME_ID, user_id="x' OR 'a'='a") is None


def test_registry_opens_it(folder):
    lance = create_store("lancedb", {"path": str(folder), "table": "memories", "id_column": "memory_id",
                                     "text_column": "content", "vector_column": "embedding"})
    assert lance.query(THEME, user_id="sam", k=1).hits[0].memory_id == THEME_ID


@pytest.mark.parametrize(
    "settings,error,named",
    [
        ({"table": "no_such_table"}, NotFound, "setting table = 'no_such_table'"),
        ({"text_column": "text"}, InvalidRequest, "setting text_column = 'text': table 'memories' has no such column"),
        ({"vector_column": "vector"}, InvalidRequest, "setting vector_column = 'vector'"),
        ({"vector_column": "content"}, InvalidRequest, "setting vector_column = 'content' is a string, not a vector"),
        ({"user_column": "owner"}, InvalidRequest, "setting user_column = 'owner'"),
        ({"distance_type": "hamming"}, InvalidRequest, "setting distance_type = 'hamming'"),
    ],
)
def test_bad_settings_name_the_setting(folder, settings, error, named):
    with pytest.raises(error) as raised:
        store(folder, **settings)
    assert named in str(raised.value)


def test_missing_folder_names_the_setting(tmp_path):
    with pytest.raises(StoreUnavailable, match="setting path = .*no such folder"):
        open_store(str(tmp_path / "nowhere"))


def test_wrong_dimension_names_the_vector_setting_and_the_model(folder):
    small = open_store(str(folder), table="small", created_at_column="")
    with pytest.raises(InvalidRequest, match=r"setting vector_column = 'vector' holds 3-dimension vectors but model"):
        small.query(THEME, user_id="sam", k=3)
