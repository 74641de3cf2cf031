"""The backup and restore commands of docs/deploying.md, run as written: a session
with adjudications is backed up, lost, restored, and the restored database holds the
same labels, the same counted pairs and the same history (a SQLite file, and a real
PostgreSQL server with its own pg_dump and pg_restore)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from postgres_server import pg_bin_dir
from team_session import SESSION, build_team_session

from dashboard.database import AppDatabase
from dashboard.labels.counted import counted

ROOT = Path(__file__).resolve().parents[3]
DEPLOYING = ROOT / "docs" / "deploying.md"


def documented_commands() -> list[str]:
    """The four bash blocks of "Backing up the label database", in order: SQLite
    backup, SQLite restore, PostgreSQL backup, PostgreSQL restore."""
    text = DEPLOYING.read_text(encoding="utf-8")
    section = text.split("## Backing up the label database", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 4, blocks
    return blocks


def run(command: str, **environ: str) -> None:
    env = {**os.environ, "PATH": f"{pg_bin_dir()}:{os.environ['PATH']}", **environ}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr


def snapshot(target: str) -> tuple:
    """What a restore must bring back: every label, the pairs the session counts and the history."""
    db = AppDatabase(target)
    try:
        labels = [(r.message_id, r.memory_id, r.reviewer, r.label, r.updated_at) for r in db.labels.find()]
        history = [tuple(h.values()) for h in db.labels.changes()]
        if db.sessions.get(SESSION) is None:
            return labels, None, None, history
        found = counted(db, session=SESSION)
        pairs = sorted((r.message_id, r.memory_id, r.label) for r in found.labels)
        return labels, pairs, found.resolution.adjudicated, history
    finally:
        db.close()


def test_a_sqlite_backup_restores_the_labels_adjudications_and_history(tmp_path):
    backup, restore = documented_commands()[:2]
    data = tmp_path / "data"
    data.mkdir()
    target = str(data / "labels.sqlite")
    db = AppDatabase(target)
    try:
        build_team_session(db)
    finally:
        db.close()
    before = snapshot(target)
    assert before[2] == 2 and before[3]
    copy = tmp_path / "labels-backup.sqlite"
    run(backup, MEMLENS_DATA_DIR=str(data), BACKUP=str(copy))

    db = AppDatabase(target)  # the loss: a session deleted, a label changed
    try:
        db.sessions.delete(SESSION)
        first = db.labels.find()[0]
        db.labels.save(message_id=first.message_id, memory_id=first.memory_id, label="relevant", reviewer="zed", store="x")
    finally:
        db.close()
    assert snapshot(target) != before

    run(restore, MEMLENS_DATA_DIR=str(data), BACKUP=str(copy))
    assert snapshot(target) == before


def test_a_postgres_backup_restores_into_an_empty_database(postgres, tmp_path):
    backup, restore = documented_commands()[2:]
    target = postgres.new_database()
    db = AppDatabase(target)
    try:
        build_team_session(db)
    finally:
        db.close()
    before = snapshot(target)
    copy = tmp_path / "labels.dump"
    run(backup, MEMLENS_LABELS_URL=target, BACKUP=str(copy))
    assert copy.stat().st_size > 0

    empty = postgres.new_database()
    run(restore, MEMLENS_LABELS_URL=empty, BACKUP=str(copy))
    assert snapshot(empty) == before
    db = AppDatabase(empty)  # the restored database takes new labels and history rows
    try:
        first = db.labels.find()[0]
        db.labels.save(message_id=first.message_id, memory_id=first.memory_id, label="not_relevant", reviewer="ana", store="x")
        db.labels.save(message_id=first.message_id, memory_id=first.memory_id, label="relevant", reviewer="ana", store="x")
        assert len(db.labels.changes()) == len(before[3]) + 2  # relevant -> not -> relevant
    finally:
        db.close()
