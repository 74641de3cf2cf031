"""The embedded store's SQLite file: its schema, opened for writing or read-only, the
check that a file someone names is a memlens store before anything is written to it,
and its memories read into the arrays the store's scan runs over."""

from __future__ import annotations

import itertools
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np

from connectors.base import StoreUnavailable
from connectors.embedded.importing import as_utc

# Rows read per fetch while loading: bounds the Python objects alive at once.
LOAD_CHUNK_ROWS = 20_000

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


class Loaded(NamedTuple):
    """Every memory of the file as arrays, in the order of the memories_user index:
    each user's memories are one contiguous slice (``by_user``) of every array."""

    ids: np.ndarray
    by_user: dict[str, slice]
    created: np.ndarray
    importance: np.ndarray
    usage: np.ndarray
    vectors: np.ndarray


def read_memories(db: sqlite3.Connection, dimensions: int) -> Loaded:
    """The memories table read into arrays, the matrix filled chunk by chunk, so
    loading never holds a second copy (see EmbeddedStore._ensure_loaded)."""
    # One read snapshot for the count and the rows (unless a transaction is
    # already open, which is a snapshot of its own).
    snapshot = not db.in_transaction
    if snapshot:
        db.execute("BEGIN")
    try:
        count = db.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        cursor = db.execute(
            "SELECT id, user_id, created_at, importance, usage_count, embedding FROM memories"
            " ORDER BY user_id, created_at"
        )
        ids = np.empty(count, dtype=object)
        created = np.empty(count, dtype=np.float64)
        importance = np.empty(count, dtype=np.float32)
        usage = np.empty(count, dtype=np.float32)
        vectors = np.empty((0, dimensions), dtype=np.float32)
        users: list[str] = []
        start = 0
        while chunk := cursor.fetchmany(LOAD_CHUNK_ROWS):
            stop = start + len(chunk)
            ids[start:stop] = [r[0] for r in chunk]
            users += [r[1] for r in chunk]
            created[start:stop] = [as_utc(datetime.fromisoformat(r[2])).timestamp() for r in chunk]
            importance[start:stop] = [r[3] for r in chunk]
            usage[start:stop] = [r[4] for r in chunk]
            block = np.frombuffer(b"".join(r[5] for r in chunk), dtype=np.float32).reshape(len(chunk), -1)
            if start == 0:
                vectors = np.empty((count, block.shape[1]), dtype=np.float32)
            vectors[start:stop] = block
            start = stop
    finally:
        if snapshot:
            db.commit()
    by_user: dict[str, slice] = {}
    start = 0
    for user, rows in itertools.groupby(users):
        stop = start + sum(1 for _ in rows)
        by_user[user] = slice(start, stop)
        start = stop
    return Loaded(ids, by_user, created, importance, usage, vectors)


def writable(folder: Path) -> bool:
    """Can this process create files in ``folder`` (or create ``folder``)?"""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)
