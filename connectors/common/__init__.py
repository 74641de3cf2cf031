"""App-wide helpers that both sides import without importing a store: bounded
line reading with named issues (lines), the data directory (paths), and secret
redaction (redaction)."""
