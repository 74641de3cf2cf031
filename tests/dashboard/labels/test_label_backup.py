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

from dashboard.database import open_label_store
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
    store = open_label_store(target)
    try:
        labels = [(r.message_id, r.memory_id, r.reviewer, r.label, r.updated_at) for r in store.labels()]
        history = [tuple(h.values()) for h in store.label_history()]
        if store.session(SESSION) is None:
            return labels, None, None, history
        found = counted(store, session=SESSION)
        pairs = sorted((r.message_id, r.memory_id, r.label) for r in found.labels)
        return labels, pairs, found.resolution.adjudicated, history
    finally:
        store.close()


def test_a_sqlite_backup_restores_the_labels_adjudications_and_history(tmp_path):
    backup, restore = documented_commands()[:2]
    data = tmp_path / "data"
    data.mkdir()
    target = str(data / "labels.sqlite")
    store = open_label_store(target)
    try:
        build_team_session(store)
    finally:
        store.close()
    before = snapshot(target)
    assert before[2] == 2 and before[3]
    copy = tmp_path / "labels-backup.sqlite"
    run(backup, MEMLENS_DATA_DIR=str(data), BACKUP=str(copy))

    store = open_label_store(target)  # the loss: a session deleted, a label changed
    try:
        store.delete_session(SESSION)
        first = store.labels()[0]
        store.upsert(message_id=first.message_id, memory_id=first.memory_id, label="relevant", reviewer="zed", store="x")
    finally:
        store.close()
    assert snapshot(target) != before

    run(restore, MEMLENS_DATA_DIR=str(data), BACKUP=str(copy))
    assert snapshot(target) == before


def test_a_postgres_backup_restores_into_an_empty_database(postgres, tmp_path):
    backup, restore = documented_commands()[2:]
    target = postgres.new_database()
    store = open_label_store(target)
    try:
        build_team_session(store)
    finally:
        store.close()
    before = snapshot(target)
    copy = tmp_path / "labels.dump"
    run(backup, MEMLENS_LABELS_URL=target, BACKUP=str(copy))
    assert copy.stat().st_size > 0

    empty = postgres.new_database()
    run(restore, MEMLENS_LABELS_URL=empty, BACKUP=str(copy))
    assert snapshot(empty) == before
    store = open_label_store(empty)  # the restored database takes new labels and history rows
    try:
        first = store.labels()[0]
        store.upsert(message_id=first.message_id, memory_id=first.memory_id, label="not_relevant", reviewer="ana", store="x")
        store.upsert(message_id=first.message_id, memory_id=first.memory_id, label="relevant", reviewer="ana", store="x")
        assert len(store.label_history()) == len(before[3]) + 2  # relevant -> not -> relevant
    finally:
        store.close()
