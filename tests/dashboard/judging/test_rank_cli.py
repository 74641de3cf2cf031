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
    by_model = int(out.split(": ", 1)[1].split(" question", 1)[0])
    questions = by_model + 1
    assert by_model >= 1 and "question(s) ranked by loopback-ranker, 1 fell back to the formula" in out
    fell_back = 1 / questions
    assert f"fell back to the formula {fell_back:.1%}" in out
    assert f"retried {fell_back:.1%}" in out and f"valid on the first answer {1 - fell_back:.1%}" in out
    for metric in ("precision@3", "ndcg@3", "mrr@3"):
        line = next(line for line in out.splitlines() if line.startswith(metric))
        assert "llm " in line and "store " in line and "formula " in line and "(p " in line
    # A model doing the formula's sums orders every question it ranked as the formula
    # does: paired on those, no difference. The question that fell back is left out of
    # the llm figure (which so differs from the formula's mean over every question).
    assert "llm metrics over the" in out and "1 fell back to the formula and are left out of the llm column" in out
    precision = next(line for line in out.splitlines() if line.startswith("precision@3")).split()
    assert precision[precision.index("formula") + 2] == "(p" and precision[precision.index("formula") + 3] == "1.000)"


# ------------------------------------------------------------------ over a retrieval log

SAMPLE_LOG = QUERIES.parent / "sample_log.jsonl"  # 38 logged turns of the demo store, with query text


def _turns(path: Path) -> int:
    return len({json.loads(line)["message_id"] for line in path.read_text().splitlines() if line.strip()})


def test_rank_over_a_log_ranks_each_turn_and_scores_the_orders_on_a_judged_set(model, data_dir, demo_store, demo_dir, capsys):
    db = str(demo_dir / "demo.sqlite")
    model.script += [Reply(content="not json"), Reply(content="still not json")]  # one turn falls back
    assert main(["rank", str(SAMPLE_LOG), "--db", db, "--send-text", "--judged", str(QUERIES)]) == 0
    out = capsys.readouterr().out
    turns = _turns(SAMPLE_LOG)
    assert f"log sample_log.jsonl: {turns - 1} turn(s) ranked by loopback-ranker, 1 fell back to the formula" in out
    assert f"llm metrics over the {turns - 1} model-ranked of them; 1 fell back to the formula" in out
    assert f"fell back to the formula {1 / turns:.1%}" in out and f"retried {1 / turns:.1%}" in out
    precision = next(line for line in out.splitlines() if line.startswith("precision@3")).split()
    # Paired on the turns the model ranked, its order is the formula's: no difference.
    assert "store" in precision and precision[precision.index("formula") + 3] == "1.000)"
    # Each turn was one prompt (two for the one that fell back) carrying the log's query text.
    asked = [r.body for r in model.received if r.body]
    assert len(asked) == turns + 1
    assert any("favourite pizza topping" in m["content"] for body in asked for m in body["messages"])


def test_rank_over_a_log_without_a_judged_set_reports_the_rates_only(model, data_dir, demo_store, demo_dir, capsys):
    db = str(demo_dir / "demo.sqlite")
    assert main(["rank", str(SAMPLE_LOG), "--db", db, "--send-text"]) == 0
    out = capsys.readouterr().out
    assert "valid on the first answer 100.0%" in out
    assert "no judged set: pass --judged FILE_OR_NAME" in out and "precision@" not in out


def test_a_csv_log_without_query_text_says_what_it_needs_and_takes_it_from_the_judged_set(model, data_dir, demo_store, demo_dir, tmp_path, capsys):
    db = str(demo_dir / "demo.sqlite")
    rows = [json.loads(line) for line in SAMPLE_LOG.read_text().splitlines() if line.strip()]
    log = tmp_path / "ids-only.csv"  # a log with ids and scores only, as teams often keep them
    log.write_text("message_id,memory_id,rank,score,user_id\n"
                   + "".join(f"{r['message_id']},{r['memory_id']},{r['rank']},{r['score']},{r['user_id']}\n" for r in rows))
    assert main(["rank", str(log), "--db", db, "--send-text"]) == 2
    err = capsys.readouterr().err
    assert "no turn has query text" in err and "a `query` column" in err and "--judged" in err
    assert [r for r in model.received if r.body] == []  # nothing sent
    assert main(["rank", str(log), "--db", db, "--send-text", "--judged", str(QUERIES)]) == 0
    assert f"log ids-only.csv: {_turns(SAMPLE_LOG)} turn(s) ranked" in capsys.readouterr().out


def test_a_log_whose_memories_the_store_lacks_names_the_store_to_give(model, data_dir, tmp_path, capsys):
    from connectors.embedded.store import EmbeddedStore

    empty = tmp_path / "other.sqlite"  # a store that never held the logged memories
    EmbeddedStore(empty).close()
    assert main(["rank", str(SAMPLE_LOG), "--db", str(empty), "--send-text"]) == 2
    err = capsys.readouterr().err
    assert f"{_turns(SAMPLE_LOG)} turn(s) left out: memory 'sam-02' of 'demo-q01'" in err
    assert "a retrieval log does not carry" in err and "--db FILE, or --store NAME --config FILE" in err
    assert "the log names the store(s) embedded:68061ffc" in err
    assert [r for r in model.received if r.body] == []


def test_a_log_with_a_bad_line_names_it_and_ranks_the_rest(model, data_dir, demo_store, demo_dir, tmp_path, capsys):
    lines = SAMPLE_LOG.read_text().splitlines()
    log = tmp_path / "week.jsonl"
    log.write_text("\n".join([lines[0], '{"message_id": "x", "memory_id": "y", "rank": 0, "score": 0.5}', *lines[1:]]) + "\n")
    assert main(["rank", str(log), "--db", str(demo_dir / "demo.sqlite"), "--send-text"]) == 0
    out = capsys.readouterr()
    first = out.err.split("1 bad row(s) left out, first: ", 1)[1].split("\n", 1)[0]
    assert "week.jsonl" in first and "2" in first and "rank" in first, first
    assert f"log week.jsonl: {_turns(SAMPLE_LOG)} turn(s) ranked" in out.out


def test_turns_that_fell_back_are_never_credited_to_the_model(model, data_dir, demo_store, demo_dir, capsys):
    """A model that never answers usably: every turn is the formula's, so the model
    ranked none of them and has no metric, while the formula's column is whole."""
    db = str(demo_dir / "demo.sqlite")
    model.responder = lambda body: Reply(content="not json")
    assert main(["rank", str(SAMPLE_LOG), "--db", db, "--send-text", "--judged", str(QUERIES)]) == 0
    out = capsys.readouterr().out
    turns = _turns(SAMPLE_LOG)
    assert f"log sample_log.jsonl: 0 turn(s) ranked by loopback-ranker, {turns} fell back to the formula" in out
    assert "fell back to the formula 100.0%" in out
    assert f"llm metrics over the 0 model-ranked of them; {turns} fell back" in out
    precision = next(line for line in out.splitlines() if line.startswith("precision@3")).split()
    assert precision[1:3] == ["llm", "n/a"]
    assert float(precision[precision.index("formula") + 1]) > 0  # the formula's own figure stays
