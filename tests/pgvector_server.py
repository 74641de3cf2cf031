"""PostgreSQL with pgvector for the tests, from the `pgserver` wheel (a PyPI package
that bundles the server and the vector extension), so CI needs no system package.
pgserver starts as root too: it runs the server as its own unprivileged user."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path


class PgVectorServer:
    def __init__(self) -> None:
        import pgserver

        # Its own folder under the system temp dir, not pytest's: pytest's base folder
        # is private to root (0700), and the server runs as pgserver's own user.
        self.root = Path(tempfile.mkdtemp(prefix="memlens-pgvector-"))
        self.server = pgserver.get_server(self.root / "data", cleanup_mode="stop")
        self.server.psql("CREATE EXTENSION IF NOT EXISTS vector;")

    def url(self, database: str = "postgres") -> str:
        return self.server.get_uri(database)

    def new_database(self) -> str:
        """A fresh database with the vector extension; its URL."""
        name = "t_" + uuid.uuid4().hex[:12]
        self.server.psql(f'CREATE DATABASE "{name}";')
        import psycopg

        with psycopg.connect(self.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url(name)

    def stop(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)
