"""Replaying messages into a fresh Mem0 store, to see what its write path keeps.

The store is built from the team's Mem0 config (its LLM, embedder and custom
prompts or instructions) with one change: the vector store is a new local Qdrant
collection in a folder of the caller's, and Mem0's history file sits beside it. A
replay never writes to the team's own store.

``infer`` is a memlens key at the top of the config file (true when absent): it
is taken out before Mem0 reads the config, and passed to every ``Memory.add``. With
``infer=True`` Mem0 sends each message to the configured LLM for fact extraction,
as it does in the team's agent; with ``infer=False`` it stores the message as is
and calls no model.

Each message is added on its own (so every event Mem0 reports belongs to one
message), in the order given, with ``metadata={"source_message_id": ...}`` so a
stored memory names the message it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from connectors.base import ConnectorError, InvalidRequest, ReplayedMessage, StoreUnavailable, WriteEvent
from connectors.mem0.library import Mem0LibraryStore, load_config
from connectors.mem0.model_clients import failure_text

SOURCE_KEY = "source_message_id"


def audit_config(path: str | Path) -> tuple[dict[str, Any], bool]:
    """The Mem0 config in `path` without memlens's ``infer`` key, and that key (True
    when absent); InvalidRequest naming the file when it is not a usable config."""
    config = load_config(path)
    infer = config.pop("infer", True)
    if not isinstance(infer, bool):
        raise InvalidRequest(f"{path}: infer must be true or false, got {infer!r}")
    return config, infer


def fresh_config(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`config` writing to a new local Qdrant collection and history file in `folder`."""
    fresh = dict(config)
    vector_config = dict((config.get("vector_store") or {}).get("config") or {})
    dims = vector_config.get("embedding_model_dims")
    fresh["vector_store"] = {
        "provider": "qdrant",
        "config": {"collection_name": "write_audit", "path": str(folder / "qdrant"), "on_disk": True,
                   **({"embedding_model_dims": dims} if dims else {})},
    }
    fresh["history_db_path"] = str(folder / "history.db")
    return fresh


def _events(result: Any) -> list[WriteEvent]:
    items = result.get("results", []) if isinstance(result, dict) else result
    events = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("id") is not None:
            events.append(WriteEvent(str(item.get("event") or "ADD").upper(), str(item["id"]), item.get("memory")))
    return events


def replay(
    config: dict[str, Any],
    infer: bool,
    messages: Sequence[tuple[str, str, str, str]],
    folder: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[ReplayedMessage], Mem0LibraryStore]:
    """Add each (message_id, user_id, role, content) to a fresh store built from
    `config` in `folder`; what Mem0 reported for each, and the store (open, for
    look-ups afterwards; the caller closes it). A failure of Mem0 or its LLM stops
    the replay with StoreUnavailable naming the message."""
    store = Mem0LibraryStore.from_config(fresh_config(config, folder))
    replayed: list[ReplayedMessage] = []
    try:
        for number, (message_id, user_id, role, content) in enumerate(messages, start=1):
            try:
                result = store.memory.add([{"role": role, "content": content}], user_id=user_id, infer=infer,
                                          metadata={SOURCE_KEY: message_id})
            except Exception as exc:  # Mem0 raises its own errors, the LLM client's, pydantic's ...
                # a model's 401 may echo its key: worded with every key redacted
                raise StoreUnavailable(f"Mem0 failed on message {message_id!r}: {failure_text(exc, store.secrets)}") from exc
            replayed.append(ReplayedMessage(message_id, user_id, _events(result)))
            if progress:
                progress(number, len(messages))
    except ConnectorError:
        store.close()
        raise
    return replayed, store
