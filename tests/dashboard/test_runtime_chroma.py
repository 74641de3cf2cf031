"""A floor calibrated on a real Chroma collection (squared l2 distances), exported as
Calibrate exports it, and applied by the agent-side API to the hits the team's own
Chroma client returns: the same memories kept and dropped as Inspect's split of the
connector's hits, for every demo question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.demo_loader import demo_rows, load_chroma
from connectors.embedding.query_vectors import query_vector, remember
from connectors.registry import fingerprint
from connectors.vector.chroma import ChromaStore, persistent_client
from dashboard.calibration.label_files import parse_label_text
from dashboard.calibration.report import floor_choice, labels_score_space
from dashboard.calibration.sweep import calibrate
from dashboard.floor import apply_floor
from dashboard.runtime import FloorConfig, ScoreSpaceMismatch, memory_for_prompt, memory_from_hits

QUERIES = Path(__file__).resolve().parents[2] / "demo_data" / "queries.jsonl"
K = 5


def demo_queries() -> list[dict]:
    return [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def chroma(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chroma")
    rows, report = demo_rows()
    assert not report.issues
    load_chroma(persistent_client(folder), "demo-l2", rows, space="l2")
    remember([q["query"] for q in demo_queries()])  # encode the questions in one batch
    return ChromaStore("demo-l2", path=folder)


@pytest.fixture(scope="module")
def exported_floor(chroma, tmp_path_factory):
    """Label every demo hit by the demo judgments, calibrate, export the floor JSON as
    the Calibrate page does (the store opened in the session names the space)."""
    store_id = fingerprint("chroma", {"path": chroma.location, "collection": "demo-l2"})
    lines = []
    for q in demo_queries():
        for hit in chroma.query(q["query"], user_id=q["user_id"], k=K).hits:
            label = "relevant" if hit.memory_id in q["relevant"] else "not_relevant"
            lines.append(json.dumps({"message_id": q["message_id"], "memory_id": hit.memory_id, "rank": hit.rank,
                                     "score": hit.score, "label": label, "store": store_id}))
    labels = parse_label_text("\n".join(lines), source="chroma-labels.jsonl")
    space = labels_score_space(labels.stores(), {store_id: chroma.score_space})
    choice = floor_choice(calibrate(labels.labelled_scores(), resamples=0), labels, score_space=space)
    path = tmp_path_factory.mktemp("floor") / "memlens-floor.json"
    path.write_text(json.dumps(choice), encoding="utf-8")
    return path


def team_client_hits(chroma: ChromaStore, question: str, user_id: str) -> list[tuple[str, str, float]]:
    """What a team's own code gets from chromadb: ids, documents and raw distances."""
    answer = chroma.collection.query(
        query_embeddings=[query_vector(question)], n_results=K, where={"user_id": user_id}, include=["documents", "distances"]
    )
    return list(zip(answer["ids"][0], answer["documents"][0], answer["distances"][0], strict=True))


def test_the_exported_floor_names_chromas_l2_space(exported_floor):
    config = FloorConfig.load(exported_floor)
    assert (config.score_space.store, config.score_space.formula, config.score_space.setting) == ("chroma", "1 - d/2", "l2")


def test_raw_hits_get_inspects_split_for_every_demo_question(chroma, exported_floor):
    config = FloorConfig.load(exported_floor)
    naive_differs = 0
    for q in demo_queries():
        inspect_kept, inspect_dropped = apply_floor(chroma.query(q["query"], user_id=q["user_id"], k=K).hits, config.floor)
        raw = team_client_hits(chroma, q["query"], q["user_id"])
        turn = memory_from_hits(raw, store_kind="chroma", setting="l2", floor=config, message=q["query"])
        assert [h.memory_id for h in turn.kept] == [h.memory_id for h in inspect_kept], q["message_id"]
        assert [h.memory_id for h in turn.dropped] == [h.memory_id for h in inspect_dropped], q["message_id"]
        # the floor compared with the raw distance instead: the split a team gets by copying the number
        naive = [memory_id for memory_id, _, distance in raw if distance >= config.floor]
        naive_differs += naive != [h.memory_id for h in inspect_kept]
    assert naive_differs > 0


def test_the_store_itself_gets_the_same_split_and_other_settings_are_refused(chroma, exported_floor):
    config = FloorConfig.load(exported_floor)
    question = demo_queries()[0]
    turn = memory_for_prompt(chroma, question["query"], user_id=question["user_id"], k=K, floor=config)
    kept, _ = apply_floor(chroma.query(question["query"], user_id=question["user_id"], k=K).hits, config.floor)
    assert [h.memory_id for h in turn.kept] == [h.memory_id for h in kept]
    with pytest.raises(ScoreSpaceMismatch, match="chroma \\(cosine\\)"):
        memory_from_hits(team_client_hits(chroma, question["query"], "sam"), store_kind="chroma", setting="cosine", floor=config)
