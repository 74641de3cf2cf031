"""`memlens judge align`: two prompt variants measured on people's labels from a file,
the choice made on the tuning part, the held-out figures reported and recorded for
the judge, each row marked aligned or not. A scripted model on a real loopback
socket answers by which prompt it was sent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from chat_model_server import ChatModelServer, Reply

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.judging.align import HELD_OUT, TUNING, part_of

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_LOG = ROOT / "demo_data" / "sample_log.jsonl"
QUERIES = ROOT / "demo_data" / "queries.jsonl"
ROWS = 80  # 16 turns of the sample log


@pytest.fixture
def people_file(tmp_path, demo_store) -> Path:
    """People's labels as a memlens JSONL export with text (the demo judgments)."""
    relevant = {q["message_id"]: set(q["relevant"]) for q in map(json.loads, filter(str.strip, QUERIES.read_text().splitlines()))}
    rows = [json.loads(line) for line in SAMPLE_LOG.read_text().splitlines() if line.strip()][:ROWS]
    path = tmp_path / "people.jsonl"
    with path.open("w") as out:
        for r in rows:
            memory = demo_store.get(r["memory_id"], user_id=r["user_id"])
            label = "relevant" if r["memory_id"] in relevant.get(r["message_id"], set()) else "not_relevant"
            out.write(json.dumps({"message_id": r["message_id"], "memory_id": r["memory_id"], "label": label, "reviewer": "ana",
                                  "query_text": r["query"], "memory_text": memory.text}) + "\n")
    return path


def truth(path: Path) -> dict[tuple[str, str], bool]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {(r["query_text"], r["memory_text"]): r["label"] == "relevant" for r in rows}


@pytest.fixture
def judge_config(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("MEMLENS_LLM_MODEL", "scripted")
    config = tmp_path / "umbrela.toml"
    config.write_text('name = "umbrela"\nkind = "llm"\n')
    return config


def strict_prompt(tmp_path) -> Path:
    path = tmp_path / "strict.txt"
    path.write_text("STRICT. Grade 0-3; 2 or 3 only when the passage answers.\nQuery: {query}\nPassage: {passage}\n"
                    'Answer with {{"grade": <0-3>, "reason": "<why>"}}')
    return path


def test_the_alignment_report_for_two_prompt_variants_with_held_out_figures(people_file, judge_config, tmp_path, monkeypatch, capsys):
    answers = truth(people_file)

    def by_prompt(body) -> Reply:
        content = body["messages"][0]["content"]
        query = content.split("Query: ", 1)[1].split("\n", 1)[0]
        passage = content.split("Passage: ", 1)[1].split("\n", 1)[0]
        relevant = answers[(query, passage)]
        if content.startswith("STRICT"):  # the variant people agree with
            return Reply(content=json.dumps({"grade": 3 if relevant else 0, "reason": f"strict on {len(passage)}"}))
        # The judge's own prompt: calls everything on topic relevant (grade 2), a lenient judge.
        return Reply(content=json.dumps({"grade": 2 if relevant or len(passage) % 3 else 0, "reason": f"lenient on {len(passage)}"}))

    labels = tmp_path / "labels.sqlite"
    rows = tmp_path / "aligned.jsonl"
    with ChatModelServer(by_prompt) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        status = main(["judge", "align", str(people_file), "--judge", str(judge_config), "--prompt-variant", str(strict_prompt(tmp_path)),
                       "--labels", str(labels), "--rows", str(rows), "--send-text"])
    out = capsys.readouterr().out
    print(out)  # the report, as a user sees it
    assert status == 0
    parts = {m: part_of(m, 0, 0.5) for m in {json.loads(line)["message_id"] for line in people_file.read_text().splitlines()}}
    assert set(parts.values()) == {TUNING, HELD_OUT}
    head = re.search(r"aligning on (\d+) pair\(s\) people labelled: (\d+) tuning, (\d+) held-out", out)
    assert head and int(head.group(1)) == ROWS and int(head.group(2)) + int(head.group(3)) == ROWS
    own = re.search(r"variant judge's prompt: tuning kappa (\S+) over \d+; held-out kappa (\S+) \(95% interval (\S+) to (\S+)\) over (\d+)", out)
    strict = re.search(r"variant strict: tuning kappa (\S+) over \d+; held-out kappa (\S+) \(95% interval (\S+) to (\S+)\) over (\d+)", out)
    assert own and strict
    assert int(strict.group(5)) == int(head.group(3))  # the held-out figures are over the held-out part
    assert float(strict.group(2)) >= 0.95 and float(own.group(2)) < 0.8  # the lenient prompt says relevant too often
    assert float(strict.group(3)) <= float(strict.group(2)) <= float(strict.group(4))
    assert "held-out relevant: precision 100.0%, recall 100.0%" in out
    assert "held-out says relevant: judge" in out  # the bias line
    assert "chosen: strict" in out and 'prompt_file = "' in out
    # Every row marked aligned or not, per variant.
    written = [json.loads(line) for line in rows.read_text().splitlines()]
    assert len(written) == ROWS and all(r["strict"]["aligned"] for r in written)
    assert any(r["judge's prompt"]["aligned"] is False for r in written)
    assert all("text" not in key for r in written for key in r)  # ids only
    # The chosen variant's held-out agreement is the judge's record now.
    db = AppDatabase(labels)
    try:
        record = db.judge_labels.record("judge:umbrela@scripted")
    finally:
        db.close()
    assert record["variant"] == "strict" and record["count"] == int(head.group(3)) and record["kappa"] >= 0.95
    # Commands using the judge show it: memlens agreement --judge prints the record.
    people_file_labels = ["agreement", str(people_file), "--judge", "umbrela", "--labels", str(labels)]
    assert main(people_file_labels) == 1  # no judge labels saved by align: it only measures
    capsys.readouterr()
    db = AppDatabase(labels)
    try:
        db.judge_labels.save(message_id="x", memory_id="y", source="judge:umbrela@scripted", grade=0, reason="r")
    finally:
        db.close()
    assert main(people_file_labels) == 0
    assert f"recorded by memlens judge align: variant strict, held-out kappa {record['kappa']:.3f} over {record['count']} pair(s)" in capsys.readouterr().out


def test_few_shot_examples_come_from_the_tuning_part_into_the_prompt(people_file, judge_config, tmp_path, monkeypatch, capsys):
    sent: list[str] = []

    def record(body) -> Reply:
        sent.append(body["messages"][0]["content"])
        return Reply(content=json.dumps({"grade": len(sent) % 4, "reason": f"reason {len(sent)}"}))

    with ChatModelServer(record) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_CONCURRENCY", "2")
        assert main(["judge", "align", str(people_file), "--judge", str(judge_config), "--few-shot", "2",
                     "--labels", str(tmp_path / "l.sqlite"), "--send-text", "--no-record"]) == 0
    out = capsys.readouterr().out
    assert "variant judge's prompt + 2 examples:" in out
    with_examples = [c for c in sent if "Examples of pairs people graded" in c]
    assert len(with_examples) == ROWS and len(sent) == 2 * ROWS
    assert with_examples[0].count('Answer: {"grade": ') == 2  # braces filled once, as the model should read them


def test_a_prompt_variant_without_its_placeholders_is_refused_naming_the_file(people_file, judge_config, tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("Grade this: {query}")
    monkeypatch.setenv("MEMLENS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["judge", "align", str(people_file), "--judge", str(judge_config), "--prompt-variant", str(bad), "--send-text"]) == 2
    assert f"{bad}: the prompt must hold {{passage}}" in capsys.readouterr().err


def test_few_shot_puts_people_corrections_of_the_judge_first_then_both_labels_in_turn():
    from dashboard.judging.align import AlignPair, few_shot

    pairs = [AlignPair(f"q{i}", f"m{i}", "q", "t", i % 3 == 0, TUNING if i < 12 else HELD_OUT) for i in range(16)]
    corrected = {("q4", "m4"), ("q13", "m13")}  # q13 is held out: never an example
    chosen = few_shot(pairs, 4, corrected, seed=0)
    assert chosen[0].memory_id == "m4" and all(p.part == TUNING for p in chosen)
    assert [p.relevant for p in chosen[1:]] == [True, False, True]
    assert few_shot(pairs, 4, corrected, seed=0) == chosen  # seeded: the same examples every run


def test_align_reads_a_session_with_its_kept_query_text_and_the_store_for_memory_text(judge_config, demo_store, demo_dir, tmp_path, monkeypatch, capsys):
    from dashboard.database.sessions import LabelSession, SessionItem

    rows = [json.loads(line) for line in SAMPLE_LOG.read_text().splitlines() if line.strip()][:ROWS]
    labels = tmp_path / "labels.sqlite"
    db = AppDatabase(labels)
    items = [SessionItem(i, r["message_id"], r["memory_id"], r["rank"], r["score"], r["user_id"], None, r["query"]) for i, r in enumerate(rows)]
    db.sessions.create(LabelSession(name="week", method="turns", size=len(items), keep_text=True), items)
    for r in rows:
        db.labels.save(message_id=r["message_id"], memory_id=r["memory_id"], reviewer="ana", store="s",
                     label="relevant" if r["rank"] == 1 else "not_relevant")
    db.close()
    texts = {m.memory_id: m.text for m in demo_store.list(user_id=None, limit=1000)}
    first = {(r["query"], texts[r["memory_id"]]) for r in rows if r["rank"] == 1}

    def rank_one_is_relevant(body) -> Reply:
        content = body["messages"][0]["content"]
        key = (content.split("Query: ", 1)[1].split("\n", 1)[0], content.split("Passage: ", 1)[1].split("\n", 1)[0])
        return Reply(content=json.dumps({"grade": 3 if key in first else 0, "reason": f"passage of {len(key[1])} characters"}))

    with ChatModelServer(rank_one_is_relevant) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        assert main(["judge", "align", "week", "--judge", str(judge_config), "--db", str(demo_dir / "demo.sqlite"),
                     "--labels", str(labels), "--send-text"]) == 0
    out = capsys.readouterr().out
    assert f"aligning on {ROWS} pair(s)" in out
    assert re.search(r"variant judge's prompt: tuning kappa 1\.000 over \d+; held-out kappa 1\.000", out)
