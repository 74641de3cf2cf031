"""Qdrant (local mode) and Chroma (PersistentClient), real, loaded with the demo
memories: ranking, the calibrated floor, distance normalisation, field mapping,
listing and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from demo_judgments import calibrated_floor, demo_queries, relevant_ids
from demo_questions import PIZZA, THEME

from connectors.base import InvalidRequest, NotFound, ScoreKind, StoreUnavailable
from connectors.demo_loader import demo_rows, demo_vectors, load_chroma, load_qdrant
from connectors.embedding import model_loader as embedding
from connectors.embedding.query_vectors import remember
from connectors.registry import create_store
from connectors.vector.chroma import ChromaStore, persistent_client
from connectors.vector.qdrant import QdrantStore, local_client

THEME_ID = relevant_ids("demo-q04")[0]

QDRANT_DISTANCES = ("cosine", "euclid", "manhattan", "dot")
CHROMA_SPACES = ("l2", "cosine", "ip")


@pytest.fixture(scope="session")
def demo():
    rows, report = demo_rows()
    assert not report.issues, report.summary()
    return rows


@pytest.fixture(scope="session")
def qdrant_dir(tmp_path_factory, demo):
    path = tmp_path_factory.mktemp("qdrant")
    client = local_client(path)
    for distance in QDRANT_DISTANCES:
        load_qdrant(client, f"demo_{distance}", demo, distance=distance)
    return path


@pytest.fixture(scope="session")
def chroma_dir(tmp_path_factory, demo):
    path = tmp_path_factory.mktemp("chroma")
    client = persistent_client(path)
    for space in CHROMA_SPACES:
        load_chroma(client, f"demo-{space}", demo, space=space)
    return path


def qdrant(qdrant_dir, distance: str) -> QdrantStore:
    return QdrantStore(f"demo_{distance}", path=qdrant_dir, id_field="memory_id")


def chroma(chroma_dir, space: str) -> ChromaStore:
    return ChromaStore(f"demo-{space}", path=chroma_dir)


@pytest.fixture(scope="session")
def demo_query_vectors():
    """Every demo query encoded in one batch, so calibrating does not encode 38 times."""
    remember([q["query"] for q in demo_queries()])


@pytest.fixture(scope="session")
def qdrant_floor(qdrant_dir, demo_query_vectors):
    return calibrated_floor(qdrant(qdrant_dir, "cosine"), lambda hit: hit.memory_id)


@pytest.fixture(scope="session")
def chroma_floor(chroma_dir, demo_query_vectors):
    # Chroma's default space is l2: calibrate on the collection a default setup builds.
    return calibrated_floor(chroma(chroma_dir, "l2"), lambda hit: hit.memory_id)


# ------------------------------------------------------------------ the demo questions


@pytest.mark.parametrize("distance", ["cosine", "euclid"])
def test_qdrant_theme_question_ranks_theme_memory_first(qdrant_dir, distance):
    result = qdrant(qdrant_dir, distance).query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == THEME_ID
    assert result.hits[0].text == "Prefers light UI theme"
    assert {h.metadata["user_id"] for h in result.hits} == {"sam"}


@pytest.mark.parametrize("space", CHROMA_SPACES)
def test_chroma_theme_question_ranks_theme_memory_first(chroma_dir, space):
    result = chroma(chroma_dir, space).query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == THEME_ID
    assert result.hits[0].text == "Prefers light UI theme"
    assert {h.metadata["user_id"] for h in result.hits} == {"sam"}


def test_qdrant_pizza_top_score_is_under_the_calibrated_floor(qdrant_dir, qdrant_floor):
    result = qdrant(qdrant_dir, "cosine").query(PIZZA, user_id="sam", k=5)
    assert len(result.hits) == 5  # the store still answers with its nearest memories
    assert result.hits[0].score < qdrant_floor
    # ...while the theme question's answer clears the same floor
    assert qdrant(qdrant_dir, "cosine").query(THEME, user_id="sam", k=5).hits[0].score >= qdrant_floor


def test_chroma_pizza_top_score_is_under_the_calibrated_floor(chroma_dir, chroma_floor):
    result = chroma(chroma_dir, "l2").query(PIZZA, user_id="sam", k=5)
    assert len(result.hits) == 5
    assert result.hits[0].score < chroma_floor
    assert chroma(chroma_dir, "l2").query(THEME, user_id="sam", k=5).hits[0].score >= chroma_floor


# ------------------------------------------------------------------ distances


DISTANCE_COLLECTIONS = [("chroma", "l2"), ("chroma", "cosine"), ("qdrant", "euclid")]


def open_collection(kind, name, qdrant_dir, chroma_dir):
    return chroma(chroma_dir, name) if kind == "chroma" else qdrant(qdrant_dir, name)


@pytest.mark.parametrize("kind,name", DISTANCE_COLLECTIONS)
@pytest.mark.parametrize("question", [THEME, PIZZA, "How does the user get to work?"])
def test_normalised_order_equals_the_stores_own_order(kind, name, question, qdrant_dir, chroma_dir):
    result = open_collection(kind, name, qdrant_dir, chroma_dir).query(question, user_id="sam", k=10)
    raw = [h.raw_score for h in result.hits]
    assert len(raw) == 10
    assert raw == sorted(raw), "the store returns distances, nearest first"
    assert [h.rank for h in result.hits] == list(range(1, 11))
    by_score = sorted(result.hits, key=lambda h: -h.score)
    assert [h.memory_id for h in by_score] == [h.memory_id for h in result.hits]
    assert result.score_kind is ScoreKind.DISTANCE
    assert "distance" in result.raw_score_kind
    assert all(h.score != h.raw_score for h in result.hits)


@pytest.mark.parametrize("kind,name", [*DISTANCE_COLLECTIONS, ("chroma", "ip"), ("qdrant", "cosine"), ("qdrant", "manhattan")])
def test_a_result_carries_the_space_its_connector_scored_in(kind, name, qdrant_dir, chroma_dir):
    """Inspect's raw-floor caption reads the space from the result, never from the
    numbers: the result names the rule its connector applied, and that rule turns each
    hit's raw value into its score."""
    store = open_collection(kind, name, qdrant_dir, chroma_dir)
    result = store.query(THEME, user_id="sam", k=5)
    assert result.score_space == store.score_space
    assert (result.score_space.store, result.score_space.setting) == (kind, name)
    for hit in result.hits:
        assert result.score_space.convert(hit.raw_score) == pytest.approx(hit.score)


@pytest.mark.parametrize("kind,name", [*DISTANCE_COLLECTIONS, ("chroma", "ip"), ("qdrant", "cosine")])
def test_normalised_scores_are_the_cosine_similarity(kind, name, qdrant_dir, chroma_dir, demo):
    """On unit-length embeddings every supported normalisation gives back the cosine
    similarity, so one floor means the same on each collection."""
    vectors = dict(zip((r["id"] for r in demo), demo_vectors(demo), strict=True))
    query_vector = embedding.encode([THEME])[0]
    result = open_collection(kind, name, qdrant_dir, chroma_dir).query(THEME, user_id="sam", k=5)
    for hit in result.hits:
        assert hit.score == pytest.approx(float(vectors[hit.memory_id] @ query_vector), abs=1e-4)


def test_qdrant_manhattan_keeps_order_and_says_its_floor_does_not_carry_over(qdrant_dir):
    result = qdrant(qdrant_dir, "manhattan").query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == THEME_ID
    assert [h.raw_score for h in result.hits] == sorted(h.raw_score for h in result.hits)
    assert result.hits[0].score == pytest.approx(1 / (1 + result.hits[0].raw_score))
    assert result.raw_score_kind == "manhattan distance"
    assert any("calibrate a floor for this collection" in n for n in result.notes)


def test_qdrant_dot_is_kept_as_is_with_a_note(qdrant_dir):
    result = qdrant(qdrant_dir, "dot").query(THEME, user_id="sam", k=3)
    assert result.score_kind is ScoreKind.SIMILARITY and result.raw_score_kind is None
    assert all(h.score == h.raw_score for h in result.hits)
    assert any("unit length" in n for n in result.notes)


def test_cosine_collection_reports_no_raw_kind(qdrant_dir):
    result = qdrant(qdrant_dir, "cosine").query(THEME, user_id="sam", k=3)
    assert result.score_kind is ScoreKind.SIMILARITY
    assert result.raw_score_kind is None
    assert result.notes == []


# ------------------------------------------------------------------ field mapping


def test_qdrant_maps_configured_payload_fields(tmp_path):
    from qdrant_client import models

    client = local_client(tmp_path / "custom")
    client.create_collection("notes", vectors_config=models.VectorParams(size=embedding.DIMENSIONS, distance=models.Distance.COSINE))
    texts = ["Keeps bees on the roof", "Drives an old green van"]
    vectors = embedding.encode(texts)
    client.upsert(
        "notes",
        points=[
            models.PointStruct(id=7, vector=vectors[0].tolist(), payload={"uid": "n-7", "body": texts[0], "ts": 1_700_000_000, "owner": "ana"}),
            models.PointStruct(id=8, vector=vectors[1].tolist(), payload={"uid": "n-8", "body": texts[1], "ts": "2024-05-01T10:00:00Z", "owner": "bo"}),
        ],
    )
    store = QdrantStore(
        "notes", path=tmp_path / "custom", id_field="uid", text_field="body", created_at_field="ts", user_field="owner"
    )
    hit = store.query("honey", user_id="ana", k=5).hits
    assert [h.memory_id for h in hit] == ["n-7"]
    assert hit[0].text == "Keeps bees on the roof"
    assert hit[0].created_at.year == 2023
    assert store.get("n-8").created_at.isoformat() == "2024-05-01T10:00:00+00:00"
    assert store.get("n-8", user_id="ana") is None
    assert store.users() == ["ana", "bo"]
    # without id_field the point id is the memory id
    plain = QdrantStore("notes", path=tmp_path / "custom", text_field="body", user_field="owner")
    assert plain.query("van", user_id="bo", k=1).hits[0].memory_id == "8"
    assert plain.get("8").text == texts[1]
    assert plain.get("not-an-id") is None


def test_chroma_maps_configured_metadata_fields(tmp_path):
    client = persistent_client(tmp_path / "custom")
    collection = client.create_collection("notes", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)
    texts = ["Keeps bees on the roof", "Drives an old green van"]
    collection.add(
        ids=["c1", "c2"],
        embeddings=[v.tolist() for v in embedding.encode(texts)],
        metadatas=[{"uid": "n-1", "body": texts[0], "owner": "ana", "ts": "2024-01-02T03:04:05Z"}, {"uid": "n-2", "body": texts[1], "owner": "bo"}],
    )
    store = ChromaStore("notes", path=tmp_path / "custom", id_field="uid", text_field="body", created_at_field="ts", user_field="owner")
    hits = store.query("honey", user_id="ana", k=5).hits
    assert [(h.memory_id, h.text) for h in hits] == [("n-1", texts[0])]
    assert hits[0].created_at.isoformat() == "2024-01-02T03:04:05+00:00"
    assert store.get("n-2").text == texts[1]
    assert store.get("n-2", user_id="ana") is None
    assert [m.memory_id for m in store.list(user_id="bo", limit=10)] == ["n-2"]


# ------------------------------------------------------------------ list, get, users


@pytest.mark.parametrize("kind,name", [("qdrant", "cosine"), ("chroma", "l2")])
def test_list_pages_through_one_users_memories(kind, name, qdrant_dir, chroma_dir, demo):
    store = open_collection(kind, name, qdrant_dir, chroma_dir)
    sams = {r["id"] for r in demo if r["user_id"] == "sam"}
    first, second = store.list(user_id="sam", limit=10, offset=0), store.list(user_id="sam", limit=100, offset=10)
    assert len(first) == 10
    assert {m.memory_id for m in first} | {m.memory_id for m in second} == sams
    assert not {m.memory_id for m in first} & {m.memory_id for m in second}
    assert store.users() == sorted({r["user_id"] for r in demo})
    theme = store.get(THEME_ID)
    assert theme.text == "Prefers light UI theme" and theme.user_id == "sam"
    assert store.get(THEME_ID, user_id="leo") is None
    assert store.get("no-such-memory") is None


# ------------------------------------------------------------------ errors and the registry


def test_missing_collection_and_folder_are_clear_errors(qdrant_dir, chroma_dir, tmp_path):
    with pytest.raises(NotFound, match="no collection 'nope'"):
        QdrantStore("nope", path=qdrant_dir)
    with pytest.raises(NotFound, match="no collection 'nope'"):
        ChromaStore("nope", path=chroma_dir)
    with pytest.raises(StoreUnavailable, match="No Qdrant folder"):
        create_store("qdrant", {"path": str(tmp_path / "missing"), "collection": "demo_cosine"})
    with pytest.raises(StoreUnavailable, match="No Chroma folder"):
        create_store("chroma", {"path": str(tmp_path / "missing"), "collection": "demo-l2"})
    with pytest.raises(InvalidRequest, match="path.*or a server URL"):
        create_store("qdrant", {"path": "", "url": "", "collection": "demo_cosine"})
    with pytest.raises(InvalidRequest, match="empty"):
        qdrant(qdrant_dir, "cosine").query("  ", user_id="sam", k=5)


def test_registry_opens_both_with_sidebar_style_settings(qdrant_dir, chroma_dir):
    """The sidebar passes every field, empty strings included."""
    q = create_store(
        "qdrant",
        {"path": str(qdrant_dir), "url": "", "api_key": None, "collection": "demo_euclid", "vector_name": "",
         "id_field": "memory_id", "text_field": "text", "created_at_field": "created_at", "user_field": "user_id", "model": ""},
    )
    c = create_store(
        "chroma",
        {"path": str(chroma_dir), "url": "", "collection": "demo-cosine", "id_field": "", "text_field": "document",
         "created_at_field": "created_at", "user_field": "user_id", "model": ""},
    )
    for store in (q, c):
        top = store.query(THEME, user_id="sam", k=1).hits[0]
        assert top.memory_id == THEME_ID
        assert top.created_at is not None and top.score is not None and math.isfinite(top.score)


def test_demo_vectors_are_unit_length(demo):
    norms = np.linalg.norm(demo_vectors(demo), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-4)
