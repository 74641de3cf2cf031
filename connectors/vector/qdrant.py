"""A Qdrant collection of memories: local path (embedded mode) or a server URL.

The query is embedded with the sentence-transformers model the collection was
built with (the packaged all-MiniLM-L6-v2 unless configured), and
``query_points`` returns each point's score in the collection's distance:

    Cosine      cosine similarity in [-1, 1], higher is better   -> kept as is
    Dot         dot product, higher is better                     -> kept as is
    Euclid      euclidean distance, lower is better               -> 1 - d² / 2
    Manhattan   manhattan distance, lower is better               -> 1 / (1 + d)

For unit-length embeddings (memlens encodes unit-length) 1 - d²/2 is exactly the
cosine similarity, so a floor means the same on a Euclid collection as on a
Cosine one (and on Chroma's l2). Manhattan distance has no such identity:
1/(1+d) keeps the order, but a floor must be calibrated for that collection.
A distance is normalised on read (``QueryResult.raw_score_kind`` names it, the
store's value stays in ``Hit.raw_score``), and the store's own order is kept.
Which payload keys hold the id, text, created_at and user is configurable
(``connectors.vector.fields``).

Qdrant's local mode locks its folder to one client per process, so clients are
shared per path here: two stores (or two Compare columns) on one folder work.
"""

from __future__ import annotations

import atexit
import builtins
import inspect
import math
import threading
import time
from pathlib import Path
from typing import Any

from connectors.base import (
    BadResponse,
    Hit,
    InvalidRequest,
    Memory,
    NotFound,
    QueryResult,
    ScoreKind,
    StoreUnavailable,
    check_query,
    score_from_distance,
)
from connectors.common.redaction import remember_secrets
from connectors.common.score_spaces import AS_SENT, DISTANCE_RULES, ScoreSpace, space_for
from connectors.embedding.query_vectors import query_vector
from connectors.http.outbound import PROBE_KEY, library_transport, public_url, register_client
from connectors.vector.fields import PayloadFields, call_store, folder_or_url

DISTANCE_KINDS = {
    "cosine": (ScoreKind.SIMILARITY, None),
    "dot": (ScoreKind.SIMILARITY, None),
    "euclid": (ScoreKind.DISTANCE, "euclidean distance"),
    "manhattan": (ScoreKind.DISTANCE, "manhattan distance"),
}
NOTES = {
    "dot": "This collection ranks by dot product: it is the cosine similarity only when the stored "
    "vectors are unit length, so check how the collection was built before trusting a floor.",
    "euclid": "Scores are 1 - d²/2 of the euclidean distance d: the cosine similarity for unit-length "
    "vectors (memlens encodes unit-length; check how the collection was built).",
    "manhattan": "Scores are 1/(1+d) of the manhattan distance d: the order is the store's, but the value "
    "is not a cosine similarity, so calibrate a floor for this collection instead of reusing one.",
}
USERS_SCAN_LIMIT = 10_000

_local_clients: dict[str, Any] = {}
_local_lock = threading.Lock()


def local_client(path: str | Path):
    """The one QdrantClient for a local folder in this process."""
    from qdrant_client import QdrantClient

    key = str(Path(path).expanduser().resolve())
    with _local_lock:
        if key not in _local_clients:
            try:
                _local_clients[key] = QdrantClient(path=key)
            except Exception as exc:  # a folder locked by another process, unreadable files
                raise StoreUnavailable(f"Cannot open the Qdrant folder {key}: {exc}") from exc
        return _local_clients[key]


@atexit.register
def _close_local_clients() -> None:
    # Closed here, while the interpreter still works: QdrantClient.__del__ at
    # shutdown prints an ImportError otherwise.
    with _local_lock:
        for client in _local_clients.values():
            try:
                client.close()
            except Exception:
                pass
        _local_clients.clear()


# cosine and dot are similarities, kept as sent (connectors/common/score_spaces.py: the one table of rules)
FORMULAS = {name: rule for name, rule in DISTANCE_RULES["qdrant"].items() if rule != AS_SENT}


def normalise(distance: str, raw: float | None) -> float | None:
    """Higher-is-better score for a Qdrant score in `distance` (see module docstring)."""
    return score_from_distance(FORMULAS[distance], raw) if distance in FORMULAS else raw


class QdrantStore:
    """One named Qdrant collection, read-only."""

    name = "qdrant"

    def __init__(
        self,
        collection: str,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        vector_name: str | None = None,
        id_field: str | None = None,
        text_field: str = "text",
        created_at_field: str | None = "created_at",
        user_field: str = "user_id",
        model: str | None = None,
        timeout: float = 10.0,
    ):
        if not collection:
            raise InvalidRequest("Qdrant: name the collection to read.")
        self.collection = collection
        self.vector_name = vector_name or None
        self.fields = PayloadFields.from_options(
            id_field=id_field, text_field=text_field, created_at_field=created_at_field, user_field=user_field
        )
        self.model = model or None
        self.location = str(path or (url and public_url(url)) or "client")
        if client is not None:
            self.client = client
        elif path:
            self.client = local_client(path)
        elif url:
            from qdrant_client import QdrantClient

            # Its REST client is httpx, built from the keyword arguments it does not know:
            # the boundary's transport gives it the deadline, body cap, redirect rule and
            # redaction. No version check: that one request goes around the transport.
            remember_secrets([api_key])  # a library error quoting the server's 401 is redacted too
            transport = library_transport(what=f"Qdrant at {public_url(url)}", deadline=float(timeout), secrets=[api_key],
                                          content_types=("application/json",))
            # Newer qdrant-client releases check the server's version with a request of
            # their own, around any transport: turned off where the flag exists (1.10,
            # the lowest memlens supports, has neither the check nor the flag).
            flags = inspect.signature(QdrantClient.__init__).parameters
            unchecked: dict[str, Any] = {"check_compatibility": False} if "check_compatibility" in flags else {}
            self.client = QdrantClient(url=url, api_key=api_key or None, timeout=max(1, math.ceil(timeout)),
                                       transport=transport, **unchecked)
        else:
            raise InvalidRequest("Qdrant: give a local folder (path) or a server URL.")
        self.distance = self._read_distance()
        self.score_kind, self.raw_score_kind = DISTANCE_KINDS[self.distance]

    @property
    def score_space(self) -> ScoreSpace:
        """HasScoreSpace: the rule its collection's distance setting gives (connectors/common/score_spaces.py)."""
        return space_for(self.name, self.distance)

    def _call(self, what: str, fn, *args, **kwargs):
        """Run one client call, translating its failures at this boundary."""
        return call_store("Qdrant", self.collection, self.location, what, fn, *args, **kwargs)

    def _read_distance(self) -> str:
        exists = self._call("collection check", self.client.collection_exists, self.collection)
        if not exists:
            raise NotFound(f"Qdrant: no collection {self.collection!r} at {self.location}")
        info = self._call("collection info", self.client.get_collection, self.collection)
        vectors = info.config.params.vectors
        if isinstance(vectors, dict):
            if not vectors:
                raise BadResponse(f"Qdrant: collection {self.collection!r} has no dense vectors")
            if self.vector_name is None:
                if len(vectors) > 1:
                    raise InvalidRequest(
                        f"Qdrant: collection {self.collection!r} has named vectors "
                        f"{', '.join(sorted(vectors))}: set vector_name to one of them"
                    )
                self.vector_name = next(iter(vectors))
            if self.vector_name not in vectors:
                raise InvalidRequest(
                    f"Qdrant: collection {self.collection!r} has no vector named {self.vector_name!r} "
                    f"(it has {', '.join(sorted(vectors))})"
                )
            params = vectors[self.vector_name]
        else:
            params = vectors
        distance = str(getattr(params.distance, "value", params.distance)).lower()
        if distance not in DISTANCE_KINDS:
            raise BadResponse(f"Qdrant: unknown distance {distance!r} in collection {self.collection!r}")
        return distance

    def _user_filter(self, user_id: str | None):
        if not user_id:
            return None
        from qdrant_client import models

        return models.Filter(must=[models.FieldCondition(key=self.fields.user_field, match=models.MatchValue(value=user_id))])

    def _metadata(self, point: Any) -> dict[str, Any]:
        text_field = self.fields.text_field
        return {"point_id": str(point.id), **{k: v for k, v in (point.payload or {}).items() if k != text_field}}

    # -------------------------------------------------------------- protocol

    def query(self, text: str, *, user_id: str | None, k: int = 5) -> QueryResult:
        check_query(text, k)
        started = time.perf_counter()
        vector = query_vector(text, self.model)
        response = self._call(
            "query",
            self.client.query_points,
            self.collection,
            query=vector,
            using=self.vector_name,
            query_filter=self._user_filter(user_id),
            limit=int(k),
            with_payload=True,
        )
        latency_ms = (time.perf_counter() - started) * 1000
        hits = []
        for rank, point in enumerate(response.points, start=1):
            raw_score = float(point.score) if point.score is not None else None
            payload = point.payload or {}
            hits.append(
                Hit(
                    memory_id=self.fields.memory_id(point.id, payload),
                    rank=rank,
                    text=self.fields.text(payload),
                    score=normalise(self.distance, raw_score),
                    raw_score=raw_score,
                    created_at=self.fields.created_at(payload),
                    metadata=self._metadata(point),
                )
            )
        notes = [NOTES[self.distance]] if self.distance in NOTES else []
        raw = {
            "collection": self.collection,
            "distance": self.distance,
            "points": [{"id": str(p.id), "score": p.score, "payload": p.payload} for p in response.points],
        }
        return QueryResult.listing(
            text, hits, latency_ms=latency_ms, raw=raw, notes=notes,
            score_kind=self.score_kind, raw_score_kind=self.raw_score_kind, score_space=self.score_space,
        )

    def _to_memory(self, point: Any) -> Memory:
        payload = point.payload or {}
        return Memory(
            memory_id=self.fields.memory_id(point.id, payload),
            text=self.fields.text(payload),
            user_id=self.fields.user(payload),
            created_at=self.fields.created_at(payload),
            metadata=self._metadata(point),
        )

    def get(self, memory_id: str, *, user_id: str | None = None) -> Memory | None:
        from qdrant_client import models

        if self.fields.id_field:
            conditions: list[models.Condition] = [
                models.FieldCondition(key=self.fields.id_field, match=models.MatchValue(value=memory_id))
            ]
            if user_id:
                conditions.append(models.FieldCondition(key=self.fields.user_field, match=models.MatchValue(value=user_id)))
            points, _ = self._call(
                "get", self.client.scroll, self.collection, scroll_filter=models.Filter(must=conditions), limit=1
            )
        else:
            point_id: Any = int(memory_id) if memory_id.isdigit() else memory_id
            try:
                points = self.client.retrieve(self.collection, ids=[point_id], with_payload=True)
            except Exception:  # not a valid point id (neither an integer nor a UUID): no such memory
                return None
        if not points:
            return None
        memory = self._to_memory(points[0])
        if user_id is not None and memory.user_id != user_id:
            return None
        return memory

    def list(self, *, user_id: str | None, limit: int = 100, offset: int = 0) -> list[Memory]:
        # scroll pages by point id; walking to `offset` costs a read per page, which
        # is fine for the sizes a reviewer pages through by hand.
        collected: list[Any] = []
        next_page = None
        wanted = offset + limit
        while len(collected) < wanted:
            points, next_page = self._call(
                "list",
                self.client.scroll,
                self.collection,
                scroll_filter=self._user_filter(user_id),
                limit=min(256, wanted - len(collected)),
                offset=next_page,
                with_payload=True,
            )
            collected.extend(points)
            if next_page is None:
                break
        return [self._to_memory(p) for p in collected[offset:wanted]]

    def users(self) -> builtins.list[str]:  # SupportsUsers (`list` here is the method above)
        """The distinct user values, from the first USERS_SCAN_LIMIT points."""
        seen: set[str] = set()
        user_field = self.fields.user_field
        next_page = None
        scanned = 0
        while scanned < USERS_SCAN_LIMIT:
            points, next_page = self._call(
                "users", self.client.scroll, self.collection, limit=512, offset=next_page, with_payload=[user_field]
            )
            scanned += len(points)
            seen.update(str(p.payload[user_field]) for p in points if (p.payload or {}).get(user_field))
            if next_page is None:
                break
        return sorted(seen)

    def close(self) -> None:
        # Local clients are shared per folder (see local_client); they stay open.
        pass


def open_store(
    collection: str = "memories",
    path: str | None = None,
    url: str | None = None,
    api_key: str | None = None,
    vector_name: str | None = None,
    id_field: str | None = None,
    text_field: str = "text",
    created_at_field: str | None = "created_at",
    user_field: str = "user_id",
    model: str | None = None,
    timeout: float = 10.0,
) -> QdrantStore:
    """Registry factory: a local folder wins over a URL when both are given."""
    path, url = folder_or_url("Qdrant", path, url, marker="meta.json", kind="local folder")
    return QdrantStore(
        collection,
        path=path,
        url=url,
        api_key=api_key,
        vector_name=vector_name,
        id_field=id_field,
        text_field=text_field,
        created_at_field=created_at_field,
        user_field=user_field,
        model=model,
        timeout=timeout,
    )


def _probe(url: str, deadline: float) -> None:
    """Open a collection on a Qdrant server at ``url`` (the outbound registry's probe)."""
    QdrantStore("probe", url=url, api_key=PROBE_KEY, timeout=deadline)


register_client("qdrant", _probe, __name__)
