"""Fill a Qdrant collection, a Chroma collection or a Mem0 ``Memory`` with the
bundled demo memories, so every connector can be tried (and tested) on the same
data as the embedded store.

    python -m connectors.demo_loader qdrant PATH [--collection memories] [--distance cosine]
    python -m connectors.demo_loader chroma PATH [--collection memories] [--space cosine]
    python -m connectors.demo_loader mem0 CONFIG.yaml

Rows come from demo_data/memories.jsonl through the embedded store's validator,
so a broken line is reported (line and field) and the rest loaded. Qdrant and
Chroma get the packaged MiniLM embeddings (unit length) and a payload/metadata
with ``memory_id`` (the demo id), ``user_id``, ``text`` and ``created_at``.
Mem0 gets each memory through ``Memory.add(..., infer=False)``, with the demo id
in its metadata as ``memory_id``.
"""

from __future__ import annotations

import argparse
import hashlib
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from connectors.embedded.factories import DEMO_MEMORIES
from connectors.embedded.importing import ImportReport, parse_jsonl
from connectors.embedding import model_loader as embedding

_vector_cache: dict[tuple[str, str], np.ndarray] = {}


def demo_rows(path: Path = DEMO_MEMORIES, *, now: datetime | None = None) -> tuple[list[dict[str, Any]], ImportReport]:
    """The valid demo rows (created_at resolved) and the report of rejected lines."""
    report = ImportReport(source=str(path))
    text = Path(path).read_text(encoding="utf-8")
    return parse_jsonl(text, now or datetime.now(UTC), report), report


def demo_vectors(rows: list[dict[str, Any]], model: str | None = None) -> np.ndarray:
    """Unit-length embeddings of the rows' texts, encoded once per process."""
    texts = [r["text"] for r in rows]
    key = (model or embedding.DEFAULT_MODEL, hashlib.sha256("\n".join(texts).encode()).hexdigest())
    if key not in _vector_cache:
        _vector_cache[key] = embedding.encode(texts, model=model)
    return _vector_cache[key]


def point_id(memory_id: str) -> str:
    """A stable UUID for a demo id (Qdrant point ids are integers or UUIDs)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memlens:{memory_id}"))


def _payload(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "memory_id": row["id"],
        "user_id": row["user_id"],
        "text": row["text"],
        "created_at": row["created_at"].isoformat(),
        "importance": row["importance"],
        **{f"meta_{k}": v for k, v in row["metadata"].items() if isinstance(v, (str, int, float, bool))},
    }


def load_qdrant(client: Any, collection: str, rows: list[dict[str, Any]], *, distance: str = "cosine") -> int:
    """(Re)create `collection` with `distance` and upsert the rows; returns the count."""
    from qdrant_client import models

    if client.collection_exists(collection):
        client.delete_collection(collection)
    client.create_collection(
        collection,
        vectors_config=models.VectorParams(size=embedding.DIMENSIONS, distance=models.Distance(distance.capitalize())),
    )
    vectors = demo_vectors(rows)
    client.upsert(
        collection,
        points=[
            models.PointStruct(id=point_id(row["id"]), vector=vectors[i].tolist(), payload=_payload(row))
            for i, row in enumerate(rows)
        ],
    )
    return len(rows)


def load_chroma(client: Any, collection: str, rows: list[dict[str, Any]], *, space: str = "cosine") -> int:
    """(Re)create `collection` in `space` (l2 | cosine | ip) and add the rows."""
    try:
        client.delete_collection(collection)
    except Exception:  # not there yet
        pass
    target = client.create_collection(collection, configuration={"hnsw": {"space": space}}, embedding_function=None)
    vectors = demo_vectors(rows)
    payloads = [_payload(row) for row in rows]
    target.add(
        ids=[row["id"] for row in rows],
        embeddings=[v.tolist() for v in vectors],
        documents=[row["text"] for row in rows],
        metadatas=[{k: v for k, v in p.items() if k != "text"} for p in payloads],
    )
    return len(rows)


def load_mem0(memory: Any, rows: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Add each row with infer=False (stored as written); returns demo id -> Mem0 id."""
    created = {}
    for row in rows:
        result = memory.add(
            row["text"],
            user_id=row["user_id"],
            infer=False,
            metadata={"memory_id": row["id"], **row["metadata"]},
        )
        items = result.get("results", result) if isinstance(result, dict) else result
        created[row["id"]] = items[0]["id"]
    return created


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m connectors.demo_loader", description=__doc__.split("\n\n")[0])
    parser.add_argument("target", choices=("qdrant", "chroma", "mem0"))
    parser.add_argument("location", help="Qdrant/Chroma folder, or a Mem0 config file (YAML/JSON)")
    parser.add_argument("--collection", default="memories")
    parser.add_argument("--distance", default="cosine", choices=("cosine", "dot", "euclid", "manhattan"))
    parser.add_argument("--space", default="cosine", choices=("l2", "cosine", "ip"))
    args = parser.parse_args(argv)
    rows, report = demo_rows()
    if args.target == "qdrant":
        from connectors.vector.qdrant import local_client

        Path(args.location).mkdir(parents=True, exist_ok=True)
        count = load_qdrant(local_client(args.location), args.collection, rows, distance=args.distance)
    elif args.target == "chroma":
        from connectors.vector.chroma import persistent_client

        count = load_chroma(persistent_client(args.location), args.collection, rows, space=args.space)
    else:
        from connectors.mem0.library import Mem0LibraryStore

        count = len(load_mem0(Mem0LibraryStore.from_config(args.location).memory, rows))
    print(f"loaded {count} demo memories into {args.target} at {args.location}")
    if report.issues:
        print(report.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
