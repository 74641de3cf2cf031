"""`memlens langfuse pull|push` over real HTTP on loopback against a server answering
Langfuse's public API as Langfuse does (tests/langfuse_server.py): RETRIEVER
observations in as a retrieval log, through the cursor pages and the time range;
labels out as scores on the observation with the memory id in their metadata, the
same ids on a re-run; the keys never printed."""

from __future__ import annotations

import base64

import pytest
from langfuse_server import LangfuseServer

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.logs.langfuse import score_id
from dashboard.logs.retrieval_log import read_log

PUBLIC, SECRET = "pk-lf-41-public", "sk-lf-41-secret"


@pytest.fixture
def langfuse(monkeypatch):
    server = LangfuseServer(PUBLIC, SECRET)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET)
    yield server
    server.close()


def test_pull_reads_each_retriever_observation_as_a_turn(langfuse, tmp_path, capsys):
    out = tmp_path / "langfuse.jsonl"
    assert main(["langfuse", "pull", "--url", langfuse.url, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"langfuse pull: 5 turn(s) (1 with no document), 6 row(s) -> {out}"
    log = read_log(out)
    assert not log.issues
    rows = sorted((r.message_id, r.memory_id, int(r.rank), float(r.score)) for r in log.rows.itertuples())
    assert rows == [
        ("obs-r1", "mem-a", 1, 0.82),
        ("obs-r1", "mem-b", 2, 0.41),
        ("obs-r2", "mem-a", 2, 0.2),  # {"documents": [...]} with memory_id
        ("obs-r2", "mem-c", 1, 0.55),
        ("obs-r4", "mem-d", 1, 0.66),  # the output as a JSON string, OpenInference names
        ("obs-r5", "mem-e", 1, 0.71),
    ]
    assert list(log.empty_turns["message_id"]) == ["obs-r3"]
    assert "secret question" not in out.read_text() and "private memory text" not in out.read_text()
    # three pages of at most two: the cursor was followed, only RETRIEVER asked for
    pages = [path for method, path in langfuse.requests if method == "GET"]
    assert len(pages) == 3 and all("type=RETRIEVER" in path for path in pages)


def test_pull_takes_a_time_range(langfuse, tmp_path, capsys):
    out = tmp_path / "day2.jsonl"
    assert main(["langfuse", "pull", "--url", langfuse.url, "--from", "2026-01-02", "--to", "2026-01-03", "--out", str(out)]) == 0
    assert "2 turn(s) (1 with no document), 1 row(s)" in capsys.readouterr().out
    assert main(["monitor", str(out), "--floor", "0.5"]) == 0
    assert capsys.readouterr().out.splitlines()[3].split()[:4] == ["2026-01-02", "2", "1", "50.0%"]


def test_push_writes_scores_on_the_observation_and_a_rerun_replaces_them(langfuse, tmp_path, capsys):
    labels = tmp_path / "labels.sqlite"
    db = AppDatabase(labels)
    db.labels.save(message_id="obs-r1", memory_id="mem-a", label="relevant", reviewer="ana", store="langfuse", rank=1, score=0.82)
    db.labels.save(message_id="obs-r1", memory_id="mem-b", label="not_relevant", reviewer="ana", store="langfuse", rank=2, score=0.41)
    db.labels.save(message_id="obs-r1", memory_id="mem-b", label="not_relevant", reviewer="bo", store="langfuse", rank=2, score=0.41)
    db.labels.save(message_id="obs-r9", memory_id="mem-z", label="relevant", reviewer="ana", store="langfuse")  # not in Langfuse
    db.judge_labels.save(message_id="obs-r2", memory_id="mem-c", source="judge:strict@small", grade=3, reason="quotes the memory")
    db.close()
    argv = ["langfuse", "push", "--url", langfuse.url, "--labels", str(labels)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "langfuse push: 3 score(s) 'relevance' on 2 observation(s) (2 from people, 1 from judges)"
    assert "1 label(s) not sent" in captured.err
    sent = {(s["observationId"], s["metadata"]["memory_id"]): s for s in langfuse.scores.values()}
    assert set(sent) == {("obs-r1", "mem-a"), ("obs-r1", "mem-b"), ("obs-r2", "mem-c")}
    b = sent[("obs-r1", "mem-b")]
    assert (b["name"], b["value"], b["dataType"], b["source"], b["traceId"]) == ("relevance", 0.0, "BOOLEAN", "ANNOTATION", "trace-1")
    assert b["metadata"] == {"memory_id": "mem-b", "rank": 2, "from": "memlens", "reviewers": ["ana", "bo"]}
    c = sent[("obs-r2", "mem-c")]
    assert (c["value"], c["source"], c["metadata"]["grades"]) == (1.0, "API", [3])
    assert "quotes the memory" not in str(c)  # the judge's reason stays home
    assert b["id"] == score_id("obs-r1", "mem-b", "human")

    db = AppDatabase(labels)
    db.labels.save(message_id="obs-r1", memory_id="mem-b", label="relevant", reviewer="ana", store="langfuse", rank=2, score=0.41)
    db.close()
    assert main(argv) == 0
    assert len(langfuse.scores) == 3  # upserted by id: replaced, not added
    assert langfuse.scores[score_id("obs-r1", "mem-b", "human")]["value"] == 1.0  # a tie counts as relevant


def test_wrong_keys_exit_2_and_no_key_is_printed(langfuse, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-wrong-41")
    code = main(["langfuse", "pull", "--url", langfuse.url, "--out", str(tmp_path / "x.jsonl")])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.startswith("memlens langfuse: Langfuse observations: UnauthorizedError")
    for secret in ("sk-lf-wrong-41", PUBLIC, base64.b64encode(f"{PUBLIC}:sk-lf-wrong-41".encode()).decode()):
        assert secret not in captured.out + captured.err
    monkeypatch.delenv("LANGFUSE_SECRET_KEY")
    assert main(["langfuse", "pull", "--url", langfuse.url, "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "set $LANGFUSE_PUBLIC_KEY and $LANGFUSE_SECRET_KEY" in capsys.readouterr().err


def test_a_key_with_a_control_character_is_refused_before_anything_is_sent(langfuse, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-41\x1b[31msecret")
    assert main(["langfuse", "pull", "--url", langfuse.url, "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "$LANGFUSE_SECRET_KEY holds a control character (\\x1b at position 9" in err
    assert "sk-lf-41" not in err and "\x1b" not in err
    assert langfuse.requests == []
