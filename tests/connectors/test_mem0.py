"""Mem0 library mode against a real ``mem0.Memory`` (infer=False, the packaged
MiniLM through the huggingface embedder, a local Qdrant path, telemetry off),
loaded with the demo memories; and the version/backend score rule as a table."""

from __future__ import annotations

import importlib.metadata
import os
from datetime import UTC, datetime

import pytest
import yaml
from demo_judgments import calibrated_floor, relevant_ids
from demo_questions import PIZZA, THEME

from connectors.base import InvalidRequest, ScoreKind, StoreUnavailable
from connectors.demo_loader import demo_rows, load_mem0
from connectors.embedding import model_loader as embedding
from connectors.mem0.answers import ScoreRule, hits_from_search, score_rule
from connectors.mem0.library import UNUSED_LLM_KEY, Mem0LibraryStore, load_config, offline_config
from connectors.registry import create_store
from dashboard.ranking.rerank import rerank

THEME_ID = relevant_ids("demo-q04")[0]


# ------------------------------------------------------------------ the score rule


@pytest.mark.parametrize(
    "version,backend,distance,formula",
    [
        ("2.0.4", "chroma", True, "1/(1+d)"),
        ("2.0.4", "pgvector", True, "1 - d"),
        ("2.0.0", "Chroma", True, "1/(1+d)"),
        ("1.0.11", "pgvector", True, "1 - d"),
        ("0.1.118", "chroma", True, "1/(1+d)"),
        ("2.0.5rc1", "chroma", True, "1/(1+d)"),  # a pre-release of 2.0.5 is not yet 2.0.5
        ("2.0.5", "chroma", False, None),
        ("2.0.5", "pgvector", False, None),
        ("2.2.1", "chroma", False, None),
        ("2.2.1", "pgvector", False, None),
        ("3.0.0", "chroma", False, None),
        ("2.0.4", "qdrant", False, None),
        ("1.0.0", "faiss", False, None),
        ("2.0.4", "redis", False, None),
        ("not-a-version", "chroma", False, None),
        ("", "pgvector", False, None),
    ],
)
def test_score_rule_table(version, backend, distance, formula):
    rule = score_rule(version, backend)
    assert rule.returns_distance is distance
    assert rule.formula == formula
    assert (rule.note is not None) is distance
    assert (rule.raw_kind is not None) is distance


def test_distance_rule_normalises_like_mem0_does_from_2_0_5():
    chroma, pg = score_rule("2.0.4", "chroma"), score_rule("2.0.4", "pgvector")
    assert chroma.normalise(0.0) == 1.0
    assert chroma.normalise(1.0) == 0.5
    assert pg.normalise(0.25) == 0.75
    assert pg.normalise(1.5) == 0.0  # cosine distance past 1 is clamped, as Mem0 clamps it
    assert score_rule("2.2.1", "chroma").normalise(0.42) == 0.42


def test_distances_from_an_old_backend_keep_mems_order_and_become_higher_is_better():
    """The shape Mem0 2.0.4 with Chroma returned: score is the L2 distance."""
    items = [
        {"id": "m1", "memory": "Prefers light UI theme", "score": 0.41, "user_id": "sam"},
        {"id": "m2", "memory": "Lives in Lisbon", "score": 1.32, "user_id": "sam"},
        {"id": "m3", "memory": "Has a dog", "score": 1.45, "user_id": "sam"},
    ]
    hits = hits_from_search(items, score_rule("2.0.4", "chroma"), breakdown_key="score_details")
    assert [h.memory_id for h in hits] == ["m1", "m2", "m3"]
    assert [h.raw_score for h in hits] == [0.41, 1.32, 1.45]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score == pytest.approx(1 / 1.41)


# ------------------------------------------------------------------ a real Memory


def demo_mem0_store(root, model: str) -> Mem0LibraryStore:
    """A Mem0 store on local Qdrant in `root`, its embedder Mem0's huggingface one on
    `model`, holding the demo memories."""
    os.environ.setdefault("MEM0_DIR", str(root / "mem0-dir"))  # read when mem0 is first imported
    config_file = root / "mem0.yaml"
    config_file.write_text(
        yaml.safe_dump(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {"collection_name": "memlens_demo", "path": str(root / "qdrant"), "on_disk": True},
                },
                "embedder": {"provider": "huggingface", "config": {"model": model}},
                "history_db_path": str(root / "history.db"),
            }
        )
    )
    store = create_store("mem0", {"config": str(config_file), "app_threshold": ""})
    assert isinstance(store, Mem0LibraryStore)
    rows, report = demo_rows()
    assert not report.issues
    load_mem0(store.memory, rows)
    return store


@pytest.fixture(scope="session")
def mem0_store(tmp_path_factory):
    store = demo_mem0_store(tmp_path_factory.mktemp("mem0"), embedding.packaged_model_path())
    yield store
    store.close()


def demo_id(hit) -> str:
    return hit.metadata["memory_id"]


def test_theme_question_ranks_theme_memory_first(mem0_store):
    result = mem0_store.query(THEME, user_id="sam", k=5)
    top = result.hits[0]
    assert demo_id(top) == THEME_ID
    assert top.text == "Prefers light UI theme"
    assert {h.metadata["user_id"] for h in result.hits} == {"sam"}
    # score_details lands in the breakdown, in Mem0's own words
    assert {"semantic_score", "bm25_score", "entity_boost", "final_score"} <= set(top.breakdown)
    assert top.score == pytest.approx(top.breakdown["final_score"])


def test_threshold_and_max_possible_score_are_settings_not_breakdown_components(mem0_store):
    """They would otherwise be two more columns in the hits table beside the parts of the score."""
    result = mem0_store.query(THEME, user_id="sam", k=5)
    for hit in result.hits:
        assert not {"threshold", "max_possible_score"} & set(hit.breakdown)
        assert hit.metadata["score_settings"] == {"threshold": 0.0, "max_possible_score": 1.0}  # asked for everything
    assert result.raw["results"][0]["score_details"]["threshold"] == 0.0  # the raw response keeps them too


def test_rerank_takes_relevance_from_mem0s_semantic_score(mem0_store):
    result = mem0_store.query(THEME, user_id="sam", k=5)
    reranked = rerank(result.hits, now=datetime.now(UTC), query=THEME)
    assert reranked.relevance_source == "semantic"
    semantic = {h.memory_id: h.breakdown["semantic_score"] for h in result.hits}
    assert {e.entry_id: e.relevance_score for e in reranked.entries} == pytest.approx(semantic)
    assert reranked.entries[0].entry_id == result.hits[0].memory_id and not reranked.entries[0].excluded


@pytest.fixture(scope="session")
def mem0_score_and_rank(tmp_path_factory):
    """Mem0's own hybrid scoring function. Importing mem0 reads MEM0_DIR (and writes
    there), so it points at a temporary folder when this is the first import."""
    os.environ.setdefault("MEM0_DIR", str(tmp_path_factory.mktemp("mem0-dir")))
    from mem0.utils.scoring import score_and_rank

    return score_and_rank


def test_with_bm25_on_the_hybrid_score_is_not_taken_for_relevance(mem0_score_and_rank):
    """Mem0's own scoring with BM25 active (mem0ai[extras]) divides semantic + BM25 by 2,
    so a memory that answers the question in other words scores half its similarity.
    The what-if ranking must judge it on the semantic score, not exclude it."""
    candidates = [
        {"id": "theme", "score": 0.62, "payload": {"data": "Prefers light UI theme", "user_id": "sam"}},
        {"id": "pizza", "score": 0.21, "payload": {"data": "Ordered a pizza at work", "user_id": "sam"}},
    ]
    scored = mem0_score_and_rank(candidates, {"pizza": 0.9}, {}, threshold=0.0, top_k=5, explain=True)
    items = [
        {"id": s["id"], "memory": s["payload"]["data"], "score": s["score"], "score_details": s["score_details"], "user_id": "sam"}
        for s in scored
    ]
    hits = hits_from_search(items, score_rule("2.2.1", "qdrant"), breakdown_key="score_details")
    assert [h.memory_id for h in hits] == ["pizza", "theme"]  # the keyword match leads Mem0's order
    assert {h.memory_id: h.score for h in hits} == pytest.approx({"pizza": 0.555, "theme": 0.31})
    assert all(h.metadata["score_settings"]["max_possible_score"] == 2.0 for h in hits)
    reranked = rerank(hits, now=datetime.now(UTC), query="Which UI theme does the user prefer?")
    entries = {e.entry_id: e for e in reranked.entries}
    assert entries["theme"].relevance_score == pytest.approx(0.62) and not entries["theme"].excluded
    assert entries["pizza"].relevance_score == pytest.approx(0.21) and entries["pizza"].excluded
    assert reranked.entries[0].entry_id == "theme"


def test_pizza_top_score_is_under_the_floor_calibrated_on_the_demo_judgments(mem0_store):
    floor = calibrated_floor(mem0_store, demo_id)
    result = mem0_store.query(PIZZA, user_id="sam", k=5)
    assert len(result.hits) == 5  # Mem0 still answers with its nearest memories
    assert result.hits[0].score < floor
    assert mem0_store.query(THEME, user_id="sam", k=5).hits[0].score >= floor


def test_reports_the_threshold_mem0_itself_would_apply(mem0_store):
    result = mem0_store.query(PIZZA, user_id="sam", k=5)
    hidden = sum(1 for h in result.hits if h.breakdown["semantic_score"] < 0.1)
    assert any(
        "Mem0 itself would apply threshold 0.10" in note and f"hidden {hidden} of these 5 hits" in note
        for note in result.notes
    ), result.notes
    mem0_store.app_threshold = 0.3
    try:
        note = mem0_store.threshold_note(result.hits)
    finally:
        mem0_store.app_threshold = None
    assert "threshold 0.30 (the threshold configured for your app)" in note
    assert "hidden 5 of these 5 hits" in note  # every pizza hit is under 0.3


def test_detects_the_installed_version_and_backend(mem0_store):
    assert mem0_store.version == importlib.metadata.version("mem0ai")
    assert mem0_store.backend == "qdrant"
    assert mem0_store.rule == ScoreRule(mem0_store.version, "qdrant", False)
    result = mem0_store.query(THEME, user_id="sam", k=3)
    assert result.score_kind is ScoreKind.SIMILARITY and result.raw_score_kind is None
    assert os.environ["MEM0_TELEMETRY"] == "False"


def test_list_and_get(mem0_store):
    rows, _ = demo_rows()
    sams = {r["id"] for r in rows if r["user_id"] == "sam"}
    listed = mem0_store.list(user_id="sam", limit=100)
    assert {m.metadata["memory_id"] for m in listed} == sams
    assert all(m.user_id == "sam" for m in listed)
    page = mem0_store.list(user_id="sam", limit=5, offset=5)
    assert [m.memory_id for m in page] == [m.memory_id for m in listed[5:10]]
    theme = next(m for m in listed if m.metadata["memory_id"] == THEME_ID)
    fetched = mem0_store.get(theme.memory_id)
    assert fetched.text == "Prefers light UI theme" and fetched.created_at is not None
    assert mem0_store.get(theme.memory_id, user_id="leo") is None
    assert mem0_store.get("00000000-0000-0000-0000-000000000000") is None


def test_bad_queries_are_clear_errors(mem0_store):
    with pytest.raises(InvalidRequest, match="empty"):
        mem0_store.query("   ", user_id="sam", k=5)
    with pytest.raises(InvalidRequest, match="end user"):
        mem0_store.query(THEME, user_id=None, k=5)
    with pytest.raises(InvalidRequest, match="end user"):
        mem0_store.list(user_id=None, limit=5)


# ------------------------------------------------------------------ configs


def test_offline_config_fills_what_a_local_inspection_needs(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path))
    config = offline_config({"vector_store": {"provider": "qdrant", "config": {"path": "/x"}}})
    assert config["embedder"]["config"]["model"] == embedding.packaged_model_path()
    assert config["vector_store"]["config"]["embedding_model_dims"] == 384
    assert config["llm"]["config"]["api_key"] == UNUSED_LLM_KEY
    assert config["history_db_path"] == str(tmp_path / "mem0" / "history.db")
    # a user's own choices stay
    own = offline_config({"llm": {"provider": "openai", "config": {"api_key": "sk-own"}}, "history_db_path": "/h.db"})
    assert own["llm"]["config"]["api_key"] == "sk-own" and own["history_db_path"] == "/h.db"


def test_config_file_errors_name_the_file_and_line(tmp_path):
    broken = tmp_path / "mem0.json"
    broken.write_text('{\n  "vector_store": {\n    "provider": "qdrant",,\n  }\n}\n')
    with pytest.raises(InvalidRequest, match=r"mem0\.json, line 3: not valid JSON"):
        load_config(broken)
    listed = tmp_path / "mem0.yaml"
    listed.write_text("- just\n- a list\n")
    with pytest.raises(InvalidRequest, match="must be a mapping"):
        load_config(listed)
    with pytest.raises(InvalidRequest, match="Cannot read the Mem0 config"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(InvalidRequest, match="MEMLENS_MEM0_CONFIG"):
        create_store("mem0", {"config": "", "app_threshold": ""})
    with pytest.raises(InvalidRequest, match="outside"):
        create_store("mem0", {"config": str(listed), "app_threshold": "1.5"})


def test_an_unusable_config_is_a_store_error_not_a_crash(tmp_path):
    config = tmp_path / "mem0.yaml"
    config.write_text(yaml.safe_dump({"vector_store": {"provider": "no-such-store", "config": {}}}))
    with pytest.raises((StoreUnavailable, InvalidRequest), match="Mem0"):
        Mem0LibraryStore.from_config(config)


# ------------------------------------------------------------------ older Mem0 signatures


class Mem0v2:
    def search(self, query, *, top_k=20, filters=None, threshold=0.1, rerank=False, explain=False, **kwargs): ...

    def get_all(self, *, filters=None, top_k=20, show_expired=False, **kwargs): ...


class Mem0v1:
    def search(self, query, user_id=None, agent_id=None, run_id=None, limit=100, filters=None, threshold=None): ...

    def get_all(self, user_id=None, agent_id=None, run_id=None, filters=None, limit=100): ...


class Mem0v0:
    def search(self, query, user_id=None, agent_id=None, run_id=None, limit=100, filters=None): ...


@pytest.mark.parametrize(
    "method,search,expected",
    [
        (Mem0v2.search, True, {"filters": {"user_id": "sam"}, "top_k": 5, "threshold": 0.0, "explain": True}),
        (Mem0v2.get_all, False, {"filters": {"user_id": "sam"}, "top_k": 5}),
        (Mem0v1.search, True, {"user_id": "sam", "limit": 5, "threshold": 0.0}),
        (Mem0v1.get_all, False, {"user_id": "sam", "limit": 5}),
        (Mem0v0.search, True, {"user_id": "sam", "limit": 5}),
    ],
)
def test_search_arguments_follow_the_installed_signature(method, search, expected):
    from connectors.mem0.library import call_arguments

    assert call_arguments(method, "sam", 5, search=search) == expected


def test_the_installed_mem0_gets_threshold_zero_and_explain(mem0_store):
    from connectors.mem0.library import call_arguments

    arguments = call_arguments(type(mem0_store.memory).search, "sam", 5, search=True)
    assert arguments == {"filters": {"user_id": "sam"}, "top_k": 5, "threshold": 0.0, "explain": True}


def test_mem0_embeds_on_the_same_onnx_path_as_the_other_stores(mem0_store):
    from connectors.mem0.embedding import can_take_over

    embedder = mem0_store.memory.embedding_model
    assert type(embedder).__name__ == "MemlensEmbedding"
    assert embedding.encoder().backend == "onnx"
    assert embedder.embed(THEME, "search") == pytest.approx(embedding.encode([THEME])[0].tolist(), abs=1e-6)
    # A remote text-embeddings-inference URL stays with Mem0's own class.
    assert not can_take_over({"provider": "huggingface", "config": {"model": "tei", "huggingface_base_url": "http://127.0.0.1:1"}})


def test_an_onnx_export_folder_is_a_mem0_embedder_model(mem0_store, export_folder, tmp_path):
    """A torch-free agent names the export folder (`onnx_export --out DIR`) as Mem0's
    embedder model. Mem0's own class cannot load it; memlens's encoder runs it, and the
    store ranks and scores as it does with the model the folder came from."""
    store = demo_mem0_store(tmp_path, str(export_folder))
    try:
        assert type(store.memory.embedding_model).__name__ == "MemlensEmbedding"
        for question in (THEME, PIZZA):
            got, want = store.query(question, user_id="sam", k=5).hits, mem0_store.query(question, user_id="sam", k=5).hits
            assert [demo_id(hit) for hit in got] == [demo_id(hit) for hit in want]
            assert [hit.score for hit in got] == pytest.approx([hit.score for hit in want], abs=1e-5)
    finally:
        store.close()
