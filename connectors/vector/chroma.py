"""A Chroma collection of memories: a persistent folder or a Chroma server.

The query is embedded with the sentence-transformers model the collection was
built with (the packaged all-MiniLM-L6-v2 unless configured); Chroma returns
``distances`` in the collection's space, lower is better:

    l2       squared euclidean distance   -> 1 - d / 2
    cosine   1 - cosine similarity        -> 1 - d
    ip       1 - dot product              -> 1 - d

For unit-length embeddings (sentence-transformers with normalisation, as
memlens encodes) all three give back the cosine similarity, so one floor means
the same thing on every space. The store's value is kept in ``Hit.raw_score``
and ``QueryResult.raw_score_kind`` names it; the store's order is kept.

Ids are Chroma's own unless ``id_field`` names a metadata key; the text is the
document unless ``text_field`` names a metadata key (``connectors.vector.fields``).
"""

from __future__ import annotations

import builtins
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from connectors.base import (
    COSINE_DISTANCE,
    BadResponse,
    ConnectorError,
    InvalidRequest,
    Memory,
    NotFound,
    QueryResult,
    ScoreKind,
    StoreUnavailable,
    check_query,
    distance_hit,
    score_from_distance,
    unit_length_note,
)
from connectors.common.score_spaces import DISTANCE_RULES, ScoreSpace, space_for
from connectors.embedding.query_vectors import query_vector
from connectors.vector.fields import PayloadFields, call_store, folder_or_url

RAW_KINDS = {
    "l2": "squared l2 distance",
    "cosine": "cosine distance (1 - cosine similarity)",
    "ip": "inner product distance (1 - dot product)",
}
DOCUMENT = "document"  # text_field value meaning "the Chroma document"
USERS_SCAN_LIMIT = 10_000


FORMULAS = DISTANCE_RULES["chroma"]  # connectors/common/score_spaces.py: the one table of rules


def normalise(space: str, distance: float | None) -> float | None:
    """Higher-is-better score for a Chroma distance in `space` (see module docstring)."""
    return score_from_distance(FORMULAS.get(space, COSINE_DISTANCE), distance)


def _import_chromadb():
    # Chroma reads its telemetry switch from the environment when a client is made:
    # off unless the user turned it on. Clients are made with default settings so
    # that every client on one folder in this process agrees (Chroma refuses a
    # second client on a folder with different settings).
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        import chromadb
    except ImportError as exc:
        raise StoreUnavailable("Chroma is not installed: `pip install 'memlens[chroma]'`.") from exc
    return chromadb


def persistent_client(path: str | Path):
    """A PersistentClient on `path` (Chroma shares one per folder in a process)."""
    return _import_chromadb().PersistentClient(path=str(Path(path).expanduser()))


def collection_space(collection: Any) -> str:
    """The distance space a collection was created with (Chroma's default is l2)."""
    configuration = getattr(collection, "configuration", None) or {}
    for index in ("hnsw", "spann"):
        section = configuration.get(index) if isinstance(configuration, dict) else None
        if isinstance(section, dict) and section.get("space"):
            return str(section["space"])
    metadata = getattr(collection, "metadata", None) or {}
    return str(metadata.get("hnsw:space", "l2"))


class ChromaStore:
    """One named Chroma collection, read-only."""

    name = "chroma"
    score_kind = ScoreKind.DISTANCE

    def __init__(
        self,
        collection: str,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        client: Any = None,
        id_field: str | None = None,
        text_field: str = DOCUMENT,
        created_at_field: str | None = "created_at",
        user_field: str = "user_id",
        model: str | None = None,
    ):
        if not collection:
            raise InvalidRequest("Chroma: name the collection to read.")
        self.collection_name = collection
        self.fields = PayloadFields.from_options(
            id_field=id_field,
            text_field=text_field,
            created_at_field=created_at_field,
            user_field=user_field,
            default_text_field=DOCUMENT,
        )
        self.model = model or None
        self.location = str(path or url or "client")
        try:
            if client is not None:
                self.client = client
            elif path:
                self.client = persistent_client(path)
            elif url:
                chromadb = _import_chromadb()
                parsed = urlparse(url if "://" in url else f"http://{url}")
                self.client = chromadb.HttpClient(
                    host=parsed.hostname or "localhost",
                    port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                    ssl=parsed.scheme == "https",
                )
            else:
                raise InvalidRequest("Chroma: give a persistent folder (path) or a server URL.")
        except ConnectorError:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"Cannot open Chroma at {self.location}: {type(exc).__name__}: {exc}") from exc
        self.collection = self._call("open collection", self._open_collection)
        self.space = collection_space(self.collection)
        if self.space not in RAW_KINDS:
            raise BadResponse(f"Chroma: unknown distance space {self.space!r} in collection {collection!r}")
        self.raw_score_kind = RAW_KINDS[self.space]

    @property
    def score_space(self) -> ScoreSpace:
        """HasScoreSpace: the rule its collection's distance setting gives (connectors/common/score_spaces.py)."""
        return space_for(self.name, self.space)

    def _open_collection(self):
        try:
            return self.client.get_collection(self.collection_name)
        except Exception as exc:
            if "does not exist" in str(exc).lower() or "not found" in str(exc).lower():
                raise NotFound(f"Chroma: no collection {self.collection_name!r} at {self.location}") from exc
            raise

    def _call(self, what: str, fn, *args, **kwargs):
        """Run one client call, translating its failures at this boundary."""
        return call_store("Chroma", self.collection_name, self.location, what, fn, *args, **kwargs)

    def _where(self, user_id: str | None) -> dict | None:
        return {self.fields.user_field: user_id} if user_id else None

    def _text(self, document: str | None, metadata: dict) -> str:
        if self.fields.text_field == DOCUMENT:
            return document or ""
        return self.fields.text(metadata)

    # -------------------------------------------------------------- protocol

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        started = time.perf_counter()
        vector = query_vector(text, self.model)
        response = self._call(
            "query",
            self.collection.query,
            query_embeddings=[vector],
            n_results=int(k),
            where=self._where(user_id),
            include=["documents", "metadatas", "distances"],
        )
        latency_ms = (time.perf_counter() - started) * 1000
        try:
            ids = response["ids"][0]
            distances = response["distances"][0]
            documents = (response.get("documents") or [[None] * len(ids)])[0]
            metadatas = (response.get("metadatas") or [[None] * len(ids)])[0]
            rows = list(zip(ids, distances, documents, metadatas, strict=True))  # ValueError: lists of unequal length
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise BadResponse(f"Chroma query on {self.collection_name!r}: unexpected answer shape") from exc
        hits = []
        for rank, (chroma_id, distance, document, metadata) in enumerate(rows, 1):
            metadata = dict(metadata or {})
            hits.append(
                distance_hit(
                    rank,
                    distance,
                    FORMULAS.get(self.space, COSINE_DISTANCE),
                    memory_id=self.fields.memory_id(chroma_id, metadata),
                    text=self._text(document, metadata),
                    created_at=self.fields.created_at(metadata),
                    metadata={"chroma_id": chroma_id, **metadata},
                )
            )
        notes = [] if self.space == "cosine" else [unit_length_note(f"This collection's space is {self.space}", "collection")]
        raw_body = {
            "collection": self.collection_name,
            "space": self.space,
            "ids": ids,
            "distances": distances,
            "metadatas": metadatas,
        }
        return QueryResult.listing(
            text, hits, latency_ms=latency_ms, raw=raw_body, notes=notes,
            score_kind=ScoreKind.DISTANCE, raw_score_kind=self.raw_score_kind, score_space=self.score_space,
        )

    def _memories(self, response: dict) -> list[Memory]:
        ids = response.get("ids") or []
        documents = response.get("documents") or [None] * len(ids)
        metadatas = response.get("metadatas") or [None] * len(ids)
        try:
            rows = list(zip(ids, documents, metadatas, strict=True))
        except ValueError as exc:
            raise BadResponse(f"Chroma collection {self.collection_name!r}: ids, documents and metadatas differ in length") from exc
        memories = []
        for chroma_id, document, metadata in rows:
            metadata = dict(metadata or {})
            memories.append(
                Memory(
                    memory_id=self.fields.memory_id(chroma_id, metadata),
                    text=self._text(document, metadata),
                    user_id=self.fields.user(metadata),
                    created_at=self.fields.created_at(metadata),
                    metadata={"chroma_id": chroma_id, **metadata},
                )
            )
        return memories

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        if self.fields.id_field:
            where: dict = {self.fields.id_field: memory_id}
            if user_id:
                where = {"$and": [where, {self.fields.user_field: user_id}]}
            response = self._call("get", self.collection.get, where=where, limit=1, include=["documents", "metadatas"])
        else:
            response = self._call("get", self.collection.get, ids=[memory_id], include=["documents", "metadatas"])
        found = self._memories(response)
        if not found or (user_id is not None and found[0].user_id != user_id):
            return None
        return found[0]

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        response = self._call(
            "list",
            self.collection.get,
            where=self._where(user_id),
            limit=int(limit),
            offset=int(offset),
            include=["documents", "metadatas"],
        )
        return self._memories(response)

    def users(self) -> builtins.list[str]:  # SupportsUsers (`list` here is the method above)
        response = self._call("users", self.collection.get, limit=USERS_SCAN_LIMIT, include=["metadatas"])
        user_field = self.fields.user_field
        return sorted({str(m[user_field]) for m in response.get("metadatas") or [] if m and m.get(user_field)})

    def close(self) -> None:
        pass  # Chroma shares one system per folder in a process; nothing of ours to release


def open_store(
    collection: str = "memories",
    path: str | None = None,
    url: str | None = None,
    id_field: str | None = None,
    text_field: str = DOCUMENT,
    created_at_field: str | None = "created_at",
    user_field: str = "user_id",
    model: str | None = None,
) -> ChromaStore:
    """Registry factory: a persistent folder wins over a URL when both are given."""
    path, url = folder_or_url("Chroma", path, url, marker="chroma.sqlite3", kind="persistent folder")
    return ChromaStore(
        collection,
        path=path,
        url=url,
        id_field=id_field,
        text_field=text_field,
        created_at_field=created_at_field,
        user_field=user_field,
        model=model,
    )
