"""PostgreSQL with pgvector for the tests, from the `pgserver` wheel (a PyPI package
that bundles the server and the vector extension), so CI needs no system package.
pgserver starts as root too: it runs the server as its own unprivileged user."""

from __future__ import annotations

import uuid
from pathlib import Path


class PgVectorServer:
    def __init__(self, root: Path):
        import pgserver

        self.server = pgserver.get_server(root, cleanup_mode="stop")
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
