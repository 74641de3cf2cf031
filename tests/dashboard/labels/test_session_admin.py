"""Managing a labelling session with `memlens sessions` on a real SQLite file and a
real PostgreSQL server: edit reviewers and overlap, reassign unstarted turns,
archive, delete with the labels kept (and exported first)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.database import AppDatabase
from dashboard.database.sessions import LabelSession, SessionItem
from dashboard.labels import labelling
from dashboard.labels.sampling import assign_turns

ROOT = Path(__file__).resolve().parents[3]
MEMLENS = Path(sys.executable).parent / "memlens"
TURNS = [f"turn-{n}" for n in range(1, 9)]


def memlens(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MEMLENS), "sessions", *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "labels.sqlite")
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture
def session(target):
    """8 turns of 2 rows, ana and ben, no overlap; ana has started one of her turns."""
    db = AppDatabase(target)
    try:
        items = [SessionItem(i, turn, f"mem-{i}", 1 + i % 2, 0.1 * (i % 9)) for i, turn in
                 enumerate(t for t in TURNS for _ in range(2))]  # fmt: skip
        made = LabelSession(name="week", method="turns", size=len(items), seed=4, reviewers=["ana", "ben"])
        db.sessions.create(made, items, assign_turns(TURNS, ["ana", "ben"], 0.0, seed=4))
        started = next(t for t, names in db.sessions.assignments("week").items() if names == ["ana"])
        item = next(i for i in items if i.message_id == started)
        labelling.record(db, made, item, "ana", "relevant", connected_store="embedded:x")
    finally:
        db.close()
    return target, started


def assignments(target: str) -> dict[str, list[str]]:
    db = AppDatabase(target)
    try:
        return db.sessions.assignments("week")
    finally:
        db.close()


def test_editing_reviewers_deals_only_the_unstarted_turns_again(session):
    target, started = session
    done = memlens("edit", "week", "--labels", target, "--reviewers", "ana, ben; cy", "--overlap", "0.5")
    assert done.returncode == 0, done.stderr
    assert "reviewers ana, ben, cy, overlap 50%" in done.stdout
    assert "7 turn(s) reassigned; 1 turn(s) already started kept their reviewers" in done.stdout
    after = assignments(target)
    assert after[started] == ["ana"]
    fresh = [names for turn, names in after.items() if turn != started]
    assert {name for names in fresh for name in names} == {"ana", "ben", "cy"}
    assert sum(len(names) == 2 for names in fresh) == round(0.5 * 7)  # the overlap, over the dealt turns


def test_reassign_moves_a_reviewers_unstarted_turns_and_refuses_an_unlisted_name(session):
    target, started = session
    before = assignments(target)
    refused = memlens("reassign", "week", "--labels", target, "--from", "ana", "--to", "zed")
    assert refused.returncode == 2 and "'zed' is not among this session's reviewers" in refused.stderr
    done = memlens("reassign", "week", "--labels", target, "--from", "ANA", "--to", "ben")
    assert done.returncode == 0, done.stderr
    ana_turns = [t for t, names in before.items() if "ana" in names]
    assert f"{len(ana_turns) - 1} turn(s) reassigned; 1 turn(s) already started" in done.stdout
    after = assignments(target)
    assert after[started] == ["ana"]  # her started turn stays hers
    assert all(after[t] == ["ben"] for t in ana_turns if t != started)


def test_archive_hides_a_session_and_delete_keeps_its_labels_after_exporting_them(session, tmp_path):
    target, started = session
    assert memlens("archive", "week", "--labels", target).returncode == 0
    assert "week" not in memlens("list", "--labels", target).stdout
    assert "archived" in memlens("list", "--labels", target, "--archived").stdout

    refused = memlens("delete", "week", "--labels", target)  # neither --export nor --keep-labels
    assert refused.returncode == 2 and "--export" in refused.stderr
    copy = tmp_path / "week.jsonl"
    done = memlens("delete", "week", "--labels", target, "--export", str(copy))
    assert done.returncode == 0, done.stderr
    [row] = [json.loads(line) for line in copy.read_text().splitlines()]
    assert (row["message_id"], row["reviewer"], row["label"]) == (started, "ana", "relevant")
    db = AppDatabase(target)
    try:
        assert db.sessions.get("week") is None and db.sessions.items("week") == []
        assert [(label.message_id, label.reviewer) for label in db.labels.find()] == [(started, "ana")]
    finally:
        db.close()
    gone = memlens("archive", "week", "--labels", target)
    assert gone.returncode == 2 and "no labelling session named 'week'" in gone.stderr
