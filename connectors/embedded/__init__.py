"""The embedded store: a SQLite file of memories with their embeddings (store),
the JSONL import (importing), and the vectorised scan (scan)."""
