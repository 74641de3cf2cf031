"""`memlens judge` and `memlens agreement --judge` end to end: the demo store for
memory text, a loopback model, a real label file."""

from __future__ import annotations

import re
import sqlite3

import pytest
from chat_model_server import ChatModelServer, Reply

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from dashboard.database.sessions import LabelSession, SessionItem
from dashboard.judging.label_source import JUDGE, merge_labels


def grade_by_length(body) -> Reply:
    passage = body["messages"][0]["content"].split("Passage: ", 1)[1].split("\n", 1)[0]
    grade = 3 if len(passage) % 2 else 0
    return Reply(content=f'{{"grade": {grade}, "reason": "length {len(passage)}"}}')


@pytest.fixture
def model(monkeypatch):
    with ChatModelServer(grade_by_length) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
        yield server


@pytest.fixture
def setup(tmp_path, demo_store, demo_dir):
    memories = demo_store.list(user_id=None, limit=6)
    labels_path = tmp_path / "labels.sqlite"
    db = AppDatabase(labels_path)
    items = [
        SessionItem(i, f"q{i // 3}", m.memory_id, i % 3 + 1, 0.5, m.user_id, "embedded:1", f"question {i // 3}")
        for i, m in enumerate(memories)
    ]
    db.sessions.create(LabelSession(name="s1", method="uniform", size=len(items), keep_text=True), items)
    for i, item in enumerate(items):
        for reviewer in ("ana", "ben"):
            value = "relevant" if (i + (reviewer == "ben")) % 2 else "not_relevant"
            db.labels.save(message_id=item.message_id, memory_id=item.memory_id, label=value, reviewer=reviewer, store="embedded:1")
    db.close()
    config = tmp_path / "umbrela.toml"
    config.write_text('name = "umbrela"\nkind = "llm"\n')
    base = ["--judge", str(config), "--db", str(demo_dir / "demo.sqlite"), "--labels", str(labels_path)]
    return labels_path, base, items


def test_nothing_is_sent_without_send_text_and_the_host_is_named(model, setup, capsys):
    _, base, _ = setup
    assert main(["judge", "s1", *base]) == 2
    err = capsys.readouterr().err
    assert "127.0.0.1" in err and "--send-text" in err
    assert model.received == []


def test_judging_saves_each_pair_and_a_second_run_resumes(model, setup, capsys, monkeypatch):
    labels_path, base, items = setup
    monkeypatch.setenv("MEMLENS_LLM_CONCURRENCY", "1")  # so the three 500s below meet one pair
    assert main(["judge", "s1", *base, "--send-text", "--limit", "2"]) == 0
    out = capsys.readouterr()
    assert "graded 2 pair(s), 0 failed" in out.out
    assert "sending query and memory text to http://127.0.0.1" in out.err and "graded 2/2" in out.err
    # One pair's model call fails (three 500s: the client's retries too): the rest are saved.
    model.script += [Reply(status=500, body={"error": "down"})] * 3
    assert main(["judge", "s1", *base, "--send-text"]) == 1
    assert "3 pair(s), 1 failed" in capsys.readouterr().out.replace("graded 3", "3")
    assert main(["judge", "s1", *base, "--send-text"]) == 0
    assert "graded 1 pair(s)" in capsys.readouterr().out
    db = AppDatabase(labels_path)
    judged = db.judge_labels.find(source="judge:umbrela@grader")
    assert sorted((j.message_id, j.memory_id) for j in judged) == sorted((i.message_id, i.memory_id) for i in items)
    assert len(db.labels.find()) == 2 * len(items)  # people's labels untouched
    db.close()
    asked = [r for r in model.received if r.body]
    assert len(asked) == len(items) + 3  # each pair answered once, plus the failed attempts


def test_agreement_with_a_judge_keeps_the_people_lines_and_adds_the_judge(model, setup, capsys):
    labels_path, base, items = setup
    assert main(["agreement", "s1", "--labels", str(labels_path)]) == 0
    people_only = capsys.readouterr().out
    assert "judge" not in people_only
    assert main(["judge", "s1", *base, "--send-text"]) == 0
    capsys.readouterr()
    assert main(["agreement", "s1", "--labels", str(labels_path), "--judge", "umbrela"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(people_only)
    # Overall, people's label of a pair is the one rule's: ana and ben split on all six,
    # so every pair is an unresolved tie and only the per-reviewer figures stand.
    assert re.search(r"judge:umbrela@grader vs people: every pair both graded \(6\) is an unresolved tie", out)
    assert "people relevant" not in out and "  ana: " in out and "  ben: " in out
    # A lead adjudicates the six: now the overall figure (and its confusion matrix) is over them.
    db = AppDatabase(labels_path)
    for item in items:
        db.adjudications.save(message_id=item.message_id, memory_id=item.memory_id, label="relevant", adjudicator="lead",
                         note="decided", session="s1")  # fmt: skip
    db.close()
    assert main(["agreement", "s1", "--labels", str(labels_path), "--judge", "umbrela"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"judge:umbrela@grader vs people: Cohen's kappa .* over 6 pair\(s\)", out)
    assert "people relevant" in out and "6 pair(s) counted: 6 adjudicated" in out
    assert main(["agreement", "s1", "--labels", str(labels_path), "--judge", "nobody"]) == 1
    assert "no judge labels from 'nobody'" in capsys.readouterr().err


def test_a_turn_only_the_judge_graded_survives_a_store_filter(model, setup, capsys, demo_store):
    labels_path, base, _ = setup
    db = AppDatabase(labels_path)
    memory = demo_store.list(user_id=None, limit=1)[0]
    only_judge = [SessionItem(0, "q-new", memory.memory_id, 1, 0.4, memory.user_id, None, "a question nobody labelled")]
    db.sessions.create(LabelSession(name="s2", method="uniform", size=1, keep_text=True, store="embedded:1"), only_judge)
    db.close()
    assert main(["judge", "s2", *base, "--send-text"]) == 0
    capsys.readouterr()
    db = AppDatabase(labels_path)
    judged = db.judge_labels.find(source="judge:umbrela@grader")
    people = db.labels.find(store="embedded:1")
    db.close()
    assert [j.store for j in judged] == ["embedded:1"]  # the session's store, as a person's label would name it
    # Calibrate's and Quality's rule with the store picked: the message no person labelled is kept.
    merged = merge_labels(people, judged, JUDGE, "judge:umbrela@grader",
                          stores={lab.message_id: lab.store for lab in people}, store="embedded:1")
    assert [(lab.message_id, lab.store) for lab in merged.labels] == [("q-new", "embedded:1")]


def test_judging_a_log_records_each_rows_store_and_the_opened_one_where_the_log_names_none(
    model, setup, capsys, demo_store, demo_dir, tmp_path
):
    """A log row that names its store keeps that name on the judge label (as a
    person's label of that row would); a row that names none gets the fingerprint of
    the store the memory text was read from, so a store filter on either keeps it."""
    import json

    from connectors.registry import fingerprint

    labels_path, base, _ = setup
    memories = demo_store.list(user_id=None, limit=2)
    log = tmp_path / "retrievals.jsonl"
    rows = [
        {"message_id": "turn-a", "memory_id": memories[0].memory_id, "rank": 1, "score": 0.61,
         "user_id": memories[0].user_id, "query": "what pizza does the user like?", "store": "embedded:logged"},
        {"message_id": "turn-b", "memory_id": memories[1].memory_id, "rank": 1, "score": 0.42,
         "user_id": memories[1].user_id, "query": "where does the user live?"},
    ]
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["judge", str(log), *base, "--send-text"]) == 0
    assert "graded 2 pair(s), 0 failed" in capsys.readouterr().out
    db = AppDatabase(labels_path)
    stores = {j.message_id: j.store for j in db.judge_labels.find(source="judge:umbrela@grader")}
    db.close()
    opened = fingerprint("embedded", {"db_path": str((demo_dir / "demo.sqlite").resolve())})
    assert stores == {"turn-a": "embedded:logged", "turn-b": opened}
    assert opened != "embedded:logged"


def test_a_label_database_locked_mid_run_stops_with_the_grades_saved_so_far_and_a_rerun_resumes(setup, capsys, monkeypatch):
    # Another process (a second connection to the real SQLite file) takes the write
    # lock when the third question reaches the model: the two grades before it are
    # saved, the third cannot be, and the message says so instead of "nothing was saved".
    labels_path, base, items = setup
    monkeypatch.setenv("MEMLENS_LLM_CONCURRENCY", "1")  # one pair at a time: the third request follows the second save
    holder: list[sqlite3.Connection] = []

    def lock_on_the_third(body) -> Reply:
        if len(server.received) == 3 and not holder:
            other = sqlite3.connect(labels_path, isolation_level=None, check_same_thread=False)
            other.execute("BEGIN IMMEDIATE")  # the write lock, held until the test lets go
            holder.append(other)
        return grade_by_length(body)

    with ChatModelServer(lock_on_the_third) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
        try:
            assert main(["judge", "s1", *base, "--send-text"]) == 2
        finally:
            for other in holder:
                other.close()  # its transaction rolls back: the lock is let go
        err = capsys.readouterr().err
        assert "locked by another process" in err and "nothing was saved" not in err
        assert "stopped; 2 grade(s) of this run were saved before it" in err and "`memlens judge`" in err
        db = AppDatabase(labels_path)
        assert len(db.judge_labels.find(source="judge:umbrela@grader")) == 2  # what the message says
        db.close()
        # the same command again: the two are skipped, the other four graded
        assert main(["judge", "s1", *base, "--send-text"]) == 0
        out = capsys.readouterr()
        assert "graded 4 pair(s), 0 failed" in out.out and "2 already graded" in out.err
    db = AppDatabase(labels_path)
    judged = db.judge_labels.find(source="judge:umbrela@grader")
    db.close()
    assert sorted((j.message_id, j.memory_id) for j in judged) == sorted((i.message_id, i.memory_id) for i in items)
