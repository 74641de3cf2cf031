"""The bundled sample log: produced from the demo queries against the demo store at k=5."""

from __future__ import annotations

import json

import pytest

from dashboard.demo import demo_store_fingerprint
from dashboard.judged import DEMO_QUERIES, read_questions
from dashboard.logs.demo import DEMO_K, SAMPLE_LOG, log_rows, main
from dashboard.logs.retrieval_log import read_log


def test_the_sample_log_imports_cleanly_and_holds_ids_scores_and_demo_questions():
    result = read_log(SAMPLE_LOG)
    queries, problems = read_questions(DEMO_QUERIES)
    assert problems == []
    assert result.issues == [] and result.duplicates == 0
    assert result.turns == len(queries) and len(result.rows) == DEMO_K * len(queries)
    assert set(result.rows["store"]) == {demo_store_fingerprint()}
    assert set(result.rows.columns) >= {"message_id", "memory_id", "rank", "score", "user_id", "query", "timestamp"}
    # no memory text in a log: only ids
    memories = [json.loads(line)["text"] for line in (SAMPLE_LOG.parent / "memories.jsonl").read_text().splitlines() if line.strip()]
    raw = SAMPLE_LOG.read_text()
    assert not [text for text in memories if text in raw]


def test_the_sample_log_matches_what_the_demo_store_returns(demo_store):
    expected = log_rows(demo_store, read_questions(DEMO_QUERIES)[0])
    bundled = [json.loads(line) for line in SAMPLE_LOG.read_text().splitlines()]
    assert [(r["message_id"], r["memory_id"], r["rank"]) for r in bundled] == [
        (r["message_id"], r["memory_id"], r["rank"]) for r in expected
    ]
    assert [r["score"] for r in bundled] == pytest.approx([r["score"] for r in expected], abs=2e-3)


def test_a_bad_queries_file_is_named_and_the_log_is_left_as_it_was(tmp_path, capsys):
    queries = tmp_path / "queries.jsonl"
    queries.write_text(DEMO_QUERIES.read_text(encoding="utf-8") + '{"message_id": "broken", "query": 5}\n', encoding="utf-8")
    out = tmp_path / "log.jsonl"
    out.write_text("kept\n", encoding="utf-8")
    assert main(["--queries", str(queries), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "queries.jsonl: line 39, field 'query': required, a non-empty string" in err
    assert out.read_text(encoding="utf-8") == "kept\n"
    assert main(["--queries", str(tmp_path / "gone.jsonl"), "--out", str(out)]) == 1
    assert "gone.jsonl: line 0, field '(file)': cannot read" in capsys.readouterr().err
