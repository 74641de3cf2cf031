"""The embedded store's SQLite file: its schema, opened for writing or read-only, and
the check that a file someone names is a memlens store before anything is written to it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from connectors.base import StoreUnavailable

SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,            -- ISO 8601, UTC
    importance REAL NOT NULL DEFAULT 0.5,
    usage_count INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    embedding BLOB NOT NULL,             -- float32, unit length
    model TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_user ON memories(user_id, created_at);
CREATE TABLE IF NOT EXISTS feedback (
    memory_id TEXT NOT NULL,
    signal TEXT NOT NULL,
    comment TEXT,
    importance_before REAL NOT NULL,
    importance_after REAL NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def open_for_writing(path: Path) -> sqlite3.Connection:
    """``path`` opened for reading and writing (made if missing), in WAL mode, with the schema."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"Cannot open the embedded store at {path}: {exc}") from exc
    return db


def open_read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened so that nothing is written: ``mode=ro``, or, when even that
    cannot open a WAL file (its folder is not writable, so no -shm file can be
    made), ``immutable=1``: in a folder nobody can write, nothing changes the file."""
    last: sqlite3.Error | None = None
    for flags in ("mode=ro", "immutable=1"):
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True, check_same_thread=False, timeout=30)
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.Error as exc:
            last = exc
    raise StoreUnavailable(f"Cannot open the embedded store at {path} read-only: {last}")


STORE_COLUMNS = {"id", "user_id", "text", "created_at", "embedding", "model"}


def check_is_store(path: Path) -> None:
    """StoreUnavailable unless ``path`` is a SQLite file with memlens's memories
    table; decided from a read-only connection that writes nothing."""
    try:
        db = open_read_only(path)
    except StoreUnavailable:
        raise StoreUnavailable(f"{path} cannot be opened as a SQLite file (nothing was changed)") from None
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
    except sqlite3.DatabaseError:  # "file is not a database"
        columns = set()
    finally:
        db.close()
    if not STORE_COLUMNS <= columns:
        raise StoreUnavailable(
            f"{path} is not a memlens store (no memories table with {', '.join(sorted(STORE_COLUMNS))}); "
            "memlens opens only stores it made (`memlens import`) and changed nothing in this file"
        )



def writable(folder: Path) -> bool:
    """Can this process create files in ``folder`` (or create ``folder``)?"""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)
