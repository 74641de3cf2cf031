"""`memlens rank RUN` end to end: a saved run of the demo judged set, the demo store
for memory text, and a loopback ranking model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_model_server import ChatModelServer, Reply, formula_ranker

from dashboard.cli.main import main

QUERIES = Path(__file__).resolve().parents[3] / "demo_data" / "queries.jsonl"


@pytest.fixture
def model(monkeypatch):
    with ChatModelServer(formula_ranker) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "loopback-ranker")
        yield server


@pytest.fixture
def saved_run(data_dir, demo_store, demo_dir, capsys):
    db = str(demo_dir / "demo.sqlite")
    assert main(["eval", str(QUERIES), "--db", db, "--k", "5", "--format", "json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    return run_id, db


def test_nothing_is_sent_without_send_text(model, saved_run, capsys):
    run_id, db = saved_run
    assert main(["rank", run_id, "--db", db]) == 2
    assert "--send-text" in capsys.readouterr().err and model.received == []


def test_rank_reports_validity_retry_fallback_and_the_three_orders(model, saved_run, capsys):
    run_id, db = saved_run
    model.script += [Reply(content="not json"), Reply(content="still not json")]  # the first question falls back
    assert main(["rank", run_id, "--db", db, "--send-text", "--k", "3"]) == 0
    out = capsys.readouterr().out
    questions = int(out.split(": ", 1)[1].split(" question", 1)[0])
    assert questions > 1
    fell_back = 1 / questions
    assert f"fell back to the formula {fell_back:.1%}" in out
    assert f"retried {fell_back:.1%}" in out and f"valid on the first answer {1 - fell_back:.1%}" in out
    for metric in ("precision@3", "ndcg@3", "mrr@3"):
        line = next(line for line in out.splitlines() if line.startswith(metric))
        assert "llm " in line and "store " in line and "formula " in line and "(p " in line
    # A model doing the formula's sums orders every question as the formula does:
    # the LLM's figures equal the formula's, and the paired test finds no difference.
    precision = next(line for line in out.splitlines() if line.startswith("precision@3")).split()
    assert precision[2] == precision[precision.index("formula") + 1]
