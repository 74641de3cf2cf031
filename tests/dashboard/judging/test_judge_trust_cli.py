"""Judges earning trust on the command line: a broken judge called out by `memlens
judge`, people's labels read from a file (no session) as the other side of `memlens
agreement`, and `memlens labels import`. The demo store for memory text, the bundled
sample log for the pairs, a scripted model on a real loopback socket."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from chat_model_server import ChatModelServer, Reply

from dashboard.cli.main import main
from dashboard.database import AppDatabase

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_LOG = ROOT / "demo_data" / "sample_log.jsonl"
QUERIES = ROOT / "demo_data" / "queries.jsonl"
PAIRS = 24  # the first 24 rows of the sample log: 5 turns' worth


def log_rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE_LOG.read_text().splitlines() if line.strip()][:PAIRS]


def people_says_relevant() -> dict[tuple[str, str], bool]:
    """(message id, memory id) -> relevant, as the demo's people judged the log's pairs."""
    relevant = {q["message_id"]: set(q["relevant"]) for q in map(json.loads, filter(str.strip, QUERIES.read_text().splitlines()))}
    return {(r["message_id"], r["memory_id"]): r["memory_id"] in relevant.get(r["message_id"], set()) for r in log_rows()}


def prompt_parts(body) -> tuple[str, str]:
    content = body["messages"][0]["content"]
    query = content.split("Query: ", 1)[1].split("\n", 1)[0]
    passage = content.split("Passage: ", 1)[1].split("\n", 1)[0]
    return query, passage


@pytest.fixture
def log(tmp_path) -> Path:
    path = tmp_path / "week.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in log_rows()))
    return path


@pytest.fixture
def judge_args(tmp_path, demo_store, demo_dir, monkeypatch):
    config = tmp_path / "umbrela.toml"
    config.write_text('name = "umbrela"\nkind = "llm"\n')
    labels = tmp_path / "labels.sqlite"
    monkeypatch.setenv("MEMLENS_LLM_MODEL", "scripted")
    return labels, ["--judge", str(config), "--db", str(demo_dir / "demo.sqlite"), "--labels", str(labels), "--send-text"]


def test_a_judge_giving_grade_0_and_the_placeholder_for_every_pair_is_called_out(log, judge_args, monkeypatch, capsys):
    labels, args = judge_args
    placeholder = Reply(content='{"grade": 0, "reason": "<one long sentence>"}')
    with ChatModelServer(lambda body: placeholder) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        status = main(["judge", str(log), *args])
    out = capsys.readouterr()
    assert "graded 24 pair(s), 0 failed" in out.out  # every answer parsed: the old check passed it
    assert status == 3  # the documented exit status of a degenerate run
    assert "warning: judge:umbrela@scripted: one grade for every pair: all 24 graded pair(s) got grade 0 (unrelated)" in out.err
    assert "24 of 24 reason(s) repeat the prompt's placeholder '<one long sentence>'" in out.err
    assert "degenerate run" in out.err
    assert "judge:umbrela@scripted: no agreement with people recorded yet" in out.err
    db = AppDatabase(labels)
    try:
        assert len(db.judge_labels.find(source="judge:umbrela@scripted")) == PAIRS  # saved, and flagged where shown
    finally:
        db.close()


def test_unparseable_answers_and_one_reason_for_everything_are_counted(log, judge_args, monkeypatch, capsys):
    labels, args = judge_args
    answers = iter(range(1000))

    def sometimes_broken(body) -> Reply:
        n = next(answers)
        if n < 6:  # three pairs answer garbage twice: unusable
            return Reply(content="I think it is relevant")
        query, passage = prompt_parts(body)
        return Reply(content=json.dumps({"grade": 3 if len(passage) % 2 else 1, "reason": "Looks fine."}))

    monkeypatch.setenv("MEMLENS_LLM_CONCURRENCY", "1")  # the broken answers meet the first pairs in order
    with ChatModelServer(sometimes_broken) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        status = main(["judge", str(log), *args])
    err = capsys.readouterr().err
    assert "graded" in err
    assert "warning: judge:umbrela@scripted: 3 of 24 pair(s) got an answer that does not parse" in err
    assert "the same reason for all 21 pair(s): 'looks fine.'" in err
    assert status == 3  # one reason for every graded pair: the reasons say nothing


def test_a_judge_that_agrees_with_a_label_file_scores_kappa_over_095_without_any_session(log, judge_args, demo_store, monkeypatch, tmp_path, capsys):
    labels, args = judge_args
    truth = people_says_relevant()
    assert 0 < sum(truth.values()) < len(truth)  # both labels occur, so kappa is defined
    by_text = {}
    for row in log_rows():
        memory = demo_store.get(row["memory_id"], user_id=row["user_id"])
        by_text[(row["query"], memory.text[:4000])] = truth[(row["message_id"], row["memory_id"])]

    def agreeing(body) -> Reply:
        relevant = by_text[prompt_parts(body)]
        return Reply(content=json.dumps({"grade": 3 if relevant else 0, "reason": "answers it" if relevant else "off topic"}))

    with ChatModelServer(agreeing) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        assert main(["judge", str(log), *args]) == 0
    capsys.readouterr()
    # People's labels as TREC qrels (what another tool exports): no session anywhere.
    qrels = tmp_path / "people.qrels"
    qrels.write_text("".join(f"{m} 0 {d} {int(r)}\n" for (m, d), r in truth.items()) + "broken line\n")
    assert main(["agreement", str(qrels), "--judge", "umbrela", "--labels", str(labels)]) == 0
    out = capsys.readouterr()
    assert f"people.qrels: {PAIRS} label(s) from 1 reviewer(s) (qrels)" in out.out
    assert "people.qrels: line 25, field '(line)': expected 4 columns" in out.err
    kappa = float(re.search(r"judge:umbrela@scripted vs people: Cohen's kappa (-?[0-9.]+)", out.out).group(1))
    assert kappa >= 0.95
    assert f"over {PAIRS} pair(s)" in out.out
    assert "relevant: precision 100.0%, recall 100.0%" in out.out
    db = AppDatabase(labels)
    try:
        assert db.sessions.all() == [] and db.labels.find() == []  # nothing imported, nothing relabelled
    finally:
        db.close()
    # The same labels as a memlens JSONL export read the same way.
    export = tmp_path / "people.jsonl"
    export.write_text("".join(json.dumps({"message_id": m, "memory_id": d, "label": "relevant" if r else "not_relevant",
                                          "reviewer": "ana", "score": 0.5}) + "\n" for (m, d), r in truth.items()))
    assert main(["agreement", str(export), "--judge", "umbrela", "--labels", str(labels)]) == 0
    assert f"Cohen's kappa {kappa:.3f}" in capsys.readouterr().out


def test_labels_import_makes_a_session_that_agreement_reads(tmp_path, capsys):
    labels = tmp_path / "labels.sqlite"
    people = tmp_path / "export.csv"
    people.write_text(
        "message_id,memory_id,rank,score,label,reviewer\n"
        "q1,m1,1,0.9,relevant,ana\nq1,m1,1,0.9,relevant,ben\nq1,m2,2,0.4,not_relevant,ana\n"
        "q1,m2,2,0.4,relevant,ben\nq2,m3,1,0.7,maybe,ana\nq2,m3,1,not-a-score,relevant,ana\n"
    )
    assert main(["labels", "import", str(people), "--session", "from-file", "--labels", str(labels)]) == 0
    out = capsys.readouterr()
    assert "export.csv: 5 label(s) from 2 reviewer(s) (csv), 1 bad row(s) skipped" in out.out
    assert "line 6, field 'label': must be relevant or not_relevant, got 'maybe'" in out.err
    assert "line 7, field 'score': not a usable score" in out.err  # the field ignored, the row kept
    assert "session from-file: 3 rows in 2 turns, 5 label(s) imported" in out.out
    assert main(["agreement", "from-file", "--labels", str(labels)]) == 0
    out = capsys.readouterr().out
    assert "session from-file: 3 rows in 2 turns, reviewers ana, ben" in out
    assert "1 disagreement(s)" in out
    # The name is taken now: refused, nothing written twice.
    assert main(["labels", "import", str(people), "--session", "from-file", "--labels", str(labels)]) == 2
    assert "already exists" in capsys.readouterr().err
    db = AppDatabase(labels)
    try:
        assert len(db.labels.find()) == 5
    finally:
        db.close()


def test_a_label_file_that_cannot_be_read_exits_2_naming_it(tmp_path, capsys):
    bad = tmp_path / "people.csv"
    bad.write_text("query,answer\nx,y\n")
    assert main(["labels", "import", str(bad), "--session", "s", "--labels", str(tmp_path / "l.sqlite")]) == 2
    assert f"{bad}: the CSV header (line 1) must name the columns message_id, memory_id, label" in capsys.readouterr().err
    assert main(["agreement", str(tmp_path), "--labels", str(tmp_path / "l.sqlite")]) == 2
    assert "not a regular file" in capsys.readouterr().err
