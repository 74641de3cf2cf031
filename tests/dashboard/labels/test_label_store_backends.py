"""The label store on both backends: SQLite files and a real PostgreSQL server (the
suite's `postgres` fixture, tests/conftest.py: initdb + pg_ctl on a temporary
directory, loopback port)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from dashboard.database import AppDatabase
from dashboard.database.model import LabelStoreError
from dashboard.database.postgres import PostgresConnection
from dashboard.database.sessions import LabelSession, SessionExists, SessionItem

WRITER = Path(__file__).resolve().parent / "label_writer.py"
WORKERS, ROWS = 8, 1_000


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "labels.sqlite")
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture
def store(target):
    opened = AppDatabase(target)
    yield opened
    opened.close()


def put(db, value="relevant", memory_id="m1", reviewer="ana"):
    return db.labels.save(
        message_id="msg-1", memory_id=memory_id, label=value, reviewer=reviewer, store="embedded:x", rank=1, score=0.42
    )


def test_the_url_picks_the_backend(target):
    db = AppDatabase(target)
    try:
        assert isinstance(db.conn, PostgresConnection) == target.startswith("postgresql://")
    finally:
        db.close()


def test_relabel_keeps_one_row_and_the_old_value(store):
    first = put(store, "relevant")
    second = put(store, "not_relevant")
    [row] = store.labels.find()
    assert row.label == "not_relevant" and row.score == 0.42 and row.rank == 1
    assert second.created_at == first.created_at
    assert [(h["old_label"], h["new_label"]) for h in store.labels.history("msg-1", "m1")] == [("relevant", "not_relevant")]


def test_delete_is_recorded_and_labels_survive_reopening(store, target):
    put(store, memory_id="m1")
    put(store, memory_id="m2", value="not_relevant")
    assert store.labels.delete("msg-1", "m1", "ana") is True
    assert store.labels.delete("msg-1", "m1", "ana") is False
    store.close()
    again = AppDatabase(target)
    try:
        assert [(row.memory_id, row.label) for row in again.labels.find()] == [("m2", "not_relevant")]
        assert again.labels.history("msg-1", "m1")[-1]["new_label"] is None
    finally:
        again.close()


def test_unknown_label_is_refused_on_both(store):
    with pytest.raises(ValueError, match="label must be one of"):
        put(store, "maybe")
    assert store.labels.find() == []


def items(count=4):
    return [
        SessionItem(position=i, message_id=f"t{i // 2}", memory_id=f"m{i}", rank=i % 2 + 1, score=0.1 * i,
                    user_id="sam", store="embedded:x", query_text=f"question {i // 2}")
        for i in range(count)
    ]


def test_a_session_round_trips_with_items_assignments_and_skips(store):
    session = LabelSession(name="week 1", method="turns", size=4, seed=3, overlap=0.5, reviewers=["ana", "ben"])
    store.sessions.create(session, items(), {"t0": ["ana", "ben"], "t1": ["ben"]})
    [saved] = store.sessions.all()
    assert (saved.name, saved.method, saved.seed, saved.overlap, saved.reviewers) == ("week 1", "turns", 3, 0.5, ["ana", "ben"])
    got = store.sessions.items("week 1")
    assert [(i.message_id, i.memory_id, i.rank, i.score) for i in got] == [
        (i.message_id, i.memory_id, i.rank, i.score) for i in items()
    ]
    # message text was not opted in: ids and scores only
    assert {i.query_text for i in got} == {None}
    assert store.sessions.assignments("week 1") == {"t0": ["ana", "ben"], "t1": ["ben"]}
    store.sessions.skip("week 1", "t0", "m0", "ana")
    store.sessions.skip("week 1", "t0", "m0", "ana")  # twice is still one skip
    assert store.sessions.skips("week 1") == {("t0", "m0", "ana")}
    assert store.sessions.unskip("week 1", "t0", "m0", "ana") is True
    assert store.sessions.skips("week 1") == set()
    store.labels.save(message_id="t1", memory_id="m2", label="relevant", reviewer="ben", store="embedded:x")
    store.labels.save(message_id="elsewhere", memory_id="m2", label="relevant", reviewer="ben", store="embedded:x")
    assert [(row.message_id, row.memory_id) for row in store.sessions.labels("week 1")] == [("t1", "m2")]
    with pytest.raises(SessionExists):
        store.sessions.create(LabelSession(name="week 1", method="uniform", size=0), [])


def test_message_text_is_kept_only_when_the_session_opts_in(store):
    store.sessions.create(LabelSession(name="with text", method="turns", size=2, keep_text=True), items(2))
    assert [i.query_text for i in store.sessions.items("with text")] == ["question 0", "question 0"]


def run_writers(target: str) -> None:
    """WORKERS processes, started together, each writing ROWS labels."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), target, str(w), str(ROWS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for w in range(WORKERS)
    ]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        assert out.strip() == f"done {ROWS}"


def test_eight_processes_lose_and_double_nothing(target):
    AppDatabase(target).close()  # the schema exists before the race starts
    run_writers(target)
    db = AppDatabase(target)
    try:
        rows = db.labels.find()
        keys = Counter((row.message_id, row.memory_id, row.reviewer) for row in rows)
        assert len(rows) == WORKERS * ROWS
        assert max(keys.values()) == 1
        assert {row.reviewer for row in rows} == {f"worker-{w}" for w in range(WORKERS)}
        # every relabel (a tenth of the rows) left exactly one history entry and its final value
        for w in range(WORKERS):
            relabelled = db.labels.history("msg-0000", "mem-0")
            assert [h["reviewer"] for h in relabelled].count(f"worker-{w}") == 1
        final = {(row.message_id, row.memory_id, row.reviewer): row.label for row in rows}
        for w in range(WORKERS):
            first = "relevant" if w % 2 else "not_relevant"
            assert final[("msg-0000", "mem-0", f"worker-{w}")] != first
            assert final[("msg-0000", "mem-1", f"worker-{w}")] == ("not_relevant" if w % 2 else "relevant")
    finally:
        db.close()


def test_an_unreachable_database_is_a_clear_error_without_the_password():
    with pytest.raises(LabelStoreError) as caught:
        AppDatabase("postgresql://memlens:s3cret-pw@127.0.0.1:1/labels")
    assert "s3cret-pw" not in str(caught.value) and "127.0.0.1" in str(caught.value)


def test_a_session_remembers_the_store_it_was_drawn_on(store):
    session = LabelSession(name="tied", method="turns", size=4, drawn_store="embedded:aaaa1111")
    store.sessions.create(session, items())
    saved = store.sessions.get("tied")
    assert saved is not None and saved.drawn_store == "embedded:aaaa1111"
    assert saved.drawn_on_another_store("embedded:bbbb2222") and not saved.drawn_on_another_store("embedded:aaaa1111")


def test_a_label_database_from_before_drawn_store_is_migrated_when_opened(target):
    from dashboard.database.sessions import SESSION_TABLES

    # label_sessions as an older memlens created it: no drawn_store column.
    old_schema = SESSION_TABLES.replace(",\n    drawn_store TEXT", "")
    assert "drawn_store" not in old_schema
    row = "INSERT INTO label_sessions (name, created_at, method, size) VALUES ('old week', '2026-01-01T00:00:00+00:00', 'turns', 2)"
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            for statement in old_schema.format(real="DOUBLE PRECISION").split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(row)
    else:
        import sqlite3

        old_file = sqlite3.connect(target)
        old_file.executescript(old_schema.format(real="REAL"))
        old_file.execute(row)
        old_file.commit()
        old_file.close()
    for _ in range(2):  # opening twice adds the column once
        db = AppDatabase(target)
        try:
            old = db.sessions.get("old week")
            assert old is not None and old.drawn_store is None and not old.drawn_on_another_store("embedded:x")
            if db.sessions.get("new week") is None:
                db.sessions.create(LabelSession(name="new week", method="turns", size=0, drawn_store="embedded:x"), [])
            new = db.sessions.get("new week")
            assert new is not None and new.drawn_store == "embedded:x"
        finally:
            db.close()


def test_a_judge_label_keeps_its_store_on_both_backends(store):
    store.judge_labels.save(message_id="q1", memory_id="m1", source="judge:umbrela@m", grade=3, reason="answers",
                        rank=1, store_score=0.6, store="embedded:ab12")
    store.judge_labels.save(message_id="q1", memory_id="m2", source="judge:umbrela@m", grade=0, reason="off")
    assert [(j.memory_id, j.grade, j.store) for j in store.judge_labels.find()] == [("m1", 3, "embedded:ab12"), ("m2", 0, None)]
