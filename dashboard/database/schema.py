"""The evaluation tables, in SQL both label databases accept ({real} is REAL in
SQLite, DOUBLE PRECISION in PostgreSQL). Imports nothing, so the label store can
create them without importing the evaluation package."""

EVAL_TABLES = """
CREATE TABLE IF NOT EXISTS judged_sets (
    name TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    source TEXT,
    questions INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (name, content_hash)
);
CREATE TABLE IF NOT EXISTS judged_questions (
    content_hash TEXT NOT NULL,
    position INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    user_id TEXT,
    query_text TEXT NOT NULL,
    grades TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (content_hash, message_id)
);
CREATE TABLE IF NOT EXISTS eval_runs (
    run_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    set_name TEXT NOT NULL,
    set_hash TEXT NOT NULL,
    store TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    settings TEXT NOT NULL,
    k INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    total INTEGER NOT NULL,
    keep_text INTEGER NOT NULL DEFAULT 0,
    notes TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS run_results (
    run_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    user_id TEXT,
    hits TEXT NOT NULL,
    latency_ms {real},
    error TEXT,
    query_text TEXT,
    PRIMARY KEY (run_id, message_id)
);
"""
