"""Score spaces in `memlens compare` (issue 34): an embedded-store run and a Qdrant
run of the demo set (real stores, the demo memories) score on different scales, so a
floor metric at one floor compares two different things: refused, naming both spaces.
A ranking metric is still compared. The formula is read from the runs' own (raw,
score) pairs, as it is for Chroma's squared l2 distance (a saved run does not record its space)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.common.score_spaces import AS_SENT, formula_of_pairs, raw_floor_rule
from connectors.demo_loader import demo_rows, load_qdrant
from connectors.vector.qdrant import local_client
from dashboard.cli.main import main

DEMO_QUERIES = Path(__file__).resolve().parents[3] / "demo_data" / "queries.jsonl"


@pytest.fixture
def runs(tmp_path, monkeypatch, capsys, demo_store):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    rows, _ = demo_rows()
    load_qdrant(local_client(tmp_path / "qdrant"), "demo", rows, distance="cosine")
    config = tmp_path / "qdrant.json"
    config.write_text(json.dumps({"path": str(tmp_path / "qdrant"), "collection": "demo", "id_field": "memory_id"}))
    ids = []
    for store_args in (["--db", str(demo_store.path)], ["--store", "qdrant", "--config", str(config)]):
        assert main(["eval", str(DEMO_QUERIES), *store_args, "--k", "5", "--format", "json"]) == 0
        ids.append(json.loads(capsys.readouterr().out)["run_id"])
    return ids


def test_a_floor_metric_across_score_spaces_is_refused_a_ranking_metric_is_not(runs, capsys):
    a, b = runs
    # floor_precision_per_turn: the mean over questions once called floor_precision (issue 53)
    assert main(["compare", a, b, "--metric", "floor_precision_per_turn", "--floor", "0.35"]) == 2
    err = capsys.readouterr().err
    assert "floor_precision_per_turn applies one floor to both runs, but their scores are in different spaces" in err
    assert "A: embedded: the store's score as sent; B: qdrant: the store's score as sent" in err
    assert main(["compare", a, b, "--metric", "mrr"]) == 0
    assert "mrr A " in capsys.readouterr().out
    # a pooled ratio has no per-question figure for the paired test: refused, naming the one that has
    assert main(["compare", a, b, "--metric", "floor_precision_pooled", "--floor", "0.35"]) == 2
    assert "compare floor_precision_per_turn (the mean over questions) instead" in capsys.readouterr().err


def test_the_formula_is_read_from_raw_and_score_and_gives_the_raw_floor():
    l2 = [(d, 1 - d / 2) for d in (0.4, 0.72, 1.1)]  # Chroma's squared l2
    assert formula_of_pairs(l2) == "1 - d/2"
    assert formula_of_pairs([(d, 1 - d) for d in (0.2, 0.5)]) == "1 - d"
    assert formula_of_pairs([(0.8, 0.8), (0.5, 0.5)]) == AS_SENT
    # Chroma l2 at floor 0.642: keep d <= 2(1 - 0.642) = 0.716, what memlens keeps.
    assert raw_floor_rule("1 - d/2", 0.642).endswith("i.e. d <= 0.716")
