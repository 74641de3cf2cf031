"""Label stores that fail fast and say so: a frozen PostgreSQL server (SIGSTOP, as
behind a network partition), a SQLite file another process holds in BEGIN
EXCLUSIVE, and label URLs whose password must never reach a message."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from postgres_server import PostgresServer
from waiting import wait_for

from dashboard.database import AppDatabase
from dashboard.database.model import LabelStoreError
from dashboard.database.postgres import PostgresConnection

TIMEOUT_S = 2.0


def saved_once_the_store_asks_again(db, memory_id: str) -> None:
    """The click retried until it is saved. Until the store's retry window has passed
    it refuses at once, saying the server stopped answering moments ago; any other
    error fails the test."""

    def saved() -> bool:
        try:
            upsert(db, memory_id=memory_id)
        except LabelStoreError as exc:
            assert f"stopped answering less than {TIMEOUT_S:g} s ago" in str(exc), exc
            return False
        return True

    wait_for(saved, timeout_s=10 * TIMEOUT_S, what=f"the label {memory_id} saved once the server answers")


# A hang guard, not a speed assertion: the old store blocked for minutes.
HANG_GUARD_S = 60


def upsert(db, value="relevant", memory_id="m1", reviewer="ana"):
    return db.labels.save(message_id="msg-1", memory_id=memory_id, label=value, reviewer=reviewer, store="embedded:x")


def outcome_in_thread(call) -> dict:
    """Run `call` on a thread (as Streamlit runs a page); what it returned or raised."""
    result: dict = {}

    def run() -> None:
        try:
            result["value"] = call()
        except Exception as exc:
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_GUARD_S)
    result["returned"] = not worker.is_alive()
    return result


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://memlens@127.0.0.1:1/labels?password=hunter2secret",
        "postgresql://memlens:hunter2secret@127.0.0.1:1,127.0.0.1:2/labels",
    ],
    ids=["password-parameter", "multi-host"],
)
def test_a_label_url_with_a_password_is_redacted_when_it_cannot_be_reached(url):
    with pytest.raises(LabelStoreError) as caught:
        AppDatabase(url, timeout=TIMEOUT_S)
    shown = str(caught.value)
    assert "hunter2secret" not in shown and "127.0.0.1" in shown and "***" in shown


@pytest.fixture
def postgres():
    server = PostgresServer().start()
    yield server
    server.stop()


def test_a_frozen_postgres_fails_the_click_with_a_message_and_keeps_nothing_locked(postgres):
    db = AppDatabase(postgres.new_database(), timeout=TIMEOUT_S)
    upsert(db, memory_id="before")
    postgres.freeze()
    try:
        clicks = [outcome_in_thread(lambda m=m: upsert(db, memory_id=m)) for m in ("frozen-1", "frozen-2")]
        # Two reviewers in turn: the second is not queued behind the first.
        for click in clicks:
            assert click["returned"], "the label click is still waiting on a frozen server"
            assert isinstance(click.get("error"), LabelStoreError)
            assert "did not answer" in str(click["error"]) or "cannot be reached" in str(click["error"])
        read = outcome_in_thread(db.labels.find)
        assert read["returned"] and isinstance(read.get("error"), LabelStoreError)
    finally:
        postgres.thaw()
    # The server is back: once the store's retry window has passed, the same click
    # is retried and saved, nothing earlier lost.
    saved_once_the_store_asks_again(db, "frozen-1")
    assert {label.memory_id for label in db.labels.find()} == {"before", "frozen-1"}
    db.close()


class LateTimer(threading.Timer):
    """A timer that had already begun to run when it was cancelled, as happens when a
    statement answers at the end of its allowance on a loaded machine: cancel() cannot
    stop it, so its function still runs, on its own thread."""

    started: list[threading.Thread] = []

    def cancel(self) -> None:
        super().cancel()
        late = threading.Thread(target=self.function, args=self.args, kwargs=self.kwargs)
        late.start()
        LateTimer.started.append(late)


def test_a_watchdog_that_fires_as_the_statement_answers_leaves_no_dead_connection(postgres, monkeypatch):
    db = AppDatabase(postgres.new_database(), timeout=TIMEOUT_S)
    upsert(db, memory_id="before")
    monkeypatch.setattr("dashboard.database.postgres.threading.Timer", LateTimer)
    for memory_id in ("m2", "m3", "m4"):
        upsert(db, memory_id=memory_id)
        for late in LateTimer.started:
            late.join()
        # the pooled connection the late timer saw is still usable for the next click
        assert {label.memory_id for label in db.labels.find()} >= {"before", memory_id}
        for late in LateTimer.started:
            late.join()
    assert {label.memory_id for label in db.labels.find()} == {"before", "m2", "m3", "m4"}
    db.close()


HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
db.execute("INSERT INTO labels VALUES ('held', 'm0', 'holder', 1, 0.5, 'relevant', 'embedded:x', 't', 't', NULL, NULL)")
print("holding", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
print("released", flush=True)
"""


def test_a_sqlite_file_held_by_another_process_fails_fast_and_loses_nothing(tmp_path: Path):
    path = tmp_path / "labels.sqlite"
    db = AppDatabase(path, timeout=TIMEOUT_S)
    upsert(db, memory_id="before")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        click = outcome_in_thread(lambda: upsert(db, memory_id="while-held"))
        assert click["returned"]
        error = click.get("error")
        assert isinstance(error, LabelStoreError), error
        assert "locked by another process" in str(error) and str(path) in str(error)
        # Reading goes on while the writer waits elsewhere (WAL).
        assert [label.memory_id for label in db.labels.find()] == ["before"]
    finally:
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
        holder.wait(30)
    upsert(db, memory_id="while-held")  # the retry after the release
    assert {label.memory_id for label in db.labels.find()} == {"before", "while-held", "m0"}
    db.close()


def test_after_a_frozen_click_the_next_reads_fail_at_once_and_a_thawed_server_is_used_again(postgres):
    db = AppDatabase(postgres.new_database(), timeout=TIMEOUT_S)
    upsert(db, memory_id="before")
    postgres.freeze()
    try:
        click = outcome_in_thread(lambda: upsert(db, memory_id="frozen"))
        assert isinstance(click.get("error"), LabelStoreError)
        # The page's rerun after the click reads sessions and labels: each gets the
        # click's message from the store's retry window, not a wait of its own.
        assert isinstance(db.conn, PostgresConnection)
        waits = []
        original = db.conn._watched

        def counted():
            waits.append(1)
            return original()

        db.conn._watched = counted  # type: ignore[method-assign]
        for read in (db.sessions.all, db.labels.find):
            outcome = outcome_in_thread(read)
            assert str(outcome.get("error")).startswith(str(click["error"]))
            assert "stopped answering less than 2 s ago" in str(outcome.get("error"))
        assert waits == []  # nothing went to the frozen server again
        db.conn._watched = original  # type: ignore[method-assign]
    finally:
        postgres.thaw()
    saved_once_the_store_asks_again(db, "after")  # past the retry window
    assert {label.memory_id for label in db.labels.find()} == {"before", "after"}
