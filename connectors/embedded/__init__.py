"""The embedded store: a SQLite file of memories with their embeddings (store), its
ranking weights (weights), its file and the arrays read from it (files), the
registry's factories and the demo store (factories), the JSONL import (importing),
and the vectorised scan (scan)."""
