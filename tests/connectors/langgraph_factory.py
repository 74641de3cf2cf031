"""Factories the LangGraph connector tests name as `module:function`, as a user would."""

from __future__ import annotations

from functools import cache

from connectors.demo_loader import demo_rows
from connectors.vector.langgraph_store import minilm_embed


@cache
def demo_store():
    """An InMemoryStore with the real MiniLM index, holding the demo memories under
    ("memories", user_id), each value {"text": ..., "kind": ...}."""
    from langgraph.store.base import IndexConfig
    from langgraph.store.memory import InMemoryStore

    index: IndexConfig = {"dims": 384, "embed": minilm_embed, "fields": ["text"]}
    store = InMemoryStore(index=index)
    rows, _ = demo_rows()
    for row in rows:
        store.put(("memories", row["user_id"]), row["id"], {"text": row["text"], "note": {"body": row["text"]}})
    return store


def wrong_dims_store():
    from langgraph.store.base import IndexConfig
    from langgraph.store.memory import InMemoryStore

    index: IndexConfig = {"dims": 768, "embed": minilm_embed}
    return InMemoryStore(index=index)


def no_index_store():
    from langgraph.store.memory import InMemoryStore

    return InMemoryStore()


def not_a_store():
    return {"memories": []}


# Where remote_embedder_store's embedding service listens; a test points it at a port
# that refuses or a server that never answers.
EMBEDDER_URL = "http://127.0.0.1:9/embed"


def remote_embedder_store():
    """An InMemoryStore whose index embeds through an embedding service over HTTP, as
    an agent with a hosted embedder builds one."""
    from collections.abc import Sequence

    import httpx
    from langgraph.store.base import IndexConfig
    from langgraph.store.memory import InMemoryStore

    def embed(texts: Sequence[str]) -> list[list[float]]:
        response = httpx.post(EMBEDDER_URL, json={"texts": list(texts)}, timeout=1)
        return response.json()["vectors"]

    index: IndexConfig = {"dims": 384, "embed": embed}
    return InMemoryStore(index=index)
