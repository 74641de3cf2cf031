"""What a person calls a store: ``Chroma · support_memories (localhost:8000)``.

Labels, sessions, runs and links carry a store's fingerprint (``chroma:1a2b3c4d``,
connectors/registry.py), the machine key; a page names the store by its kind, its
collection (table, file) and where it is, from its public settings only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

# What a person calls each kind of store, for store_name().
KIND_NAMES = {
    "embedded": "Embedded", "memorysync": "MemorySync", "http_json": "HTTP JSON service", "mem0": "Mem0",
    "mem0_platform": "Mem0 Platform", "qdrant": "Qdrant", "chroma": "Chroma", "pgvector": "pgvector",
    "langgraph": "LangGraph", "lancedb": "LanceDB",
}
# The settings that say which collection (table, file, namespace) is meant, first
# found first, and those that say where the store is.
_WHAT_FIELDS = ("collection", "table", "namespace", "config_path", "config", "db_path", "project_id", "factory")
_WHERE_FIELDS = ("url", "base_url", "path")


def _where(field: str, value: str) -> str:
    """A server's host:port (never the URL's user, password or query), or a folder's name."""
    if field == "path":
        return Path(value).name or value
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value if "://" in value else f"//{value}")
        return f"{parts.hostname}:{parts.port}" if parts.port else (parts.hostname or "")
    except ValueError:
        return ""


def store_name(name: str, public: Mapping[str, Any]) -> str:
    """A person's name for the store of kind `name` with settings `public`: its kind, collection (table,
    file) and where it is, e.g. ``Chroma · support_memories (localhost:8000)``.
    `public`: the store's public settings (``connectors.registry.public_config``),
    never its secrets. The fingerprint stays the key that labels, sessions, runs and
    links carry."""
    public = {k: str(v).strip() for k, v in public.items() if str(v or "").strip()}
    what = next((public[f] for f in _WHAT_FIELDS if f in public), "")
    if what and what in (public.get("config_path"), public.get("config"), public.get("db_path")):
        what = Path(what).name or what  # a file: its name
    if not what and name == "embedded":
        what = "demo data"
    where = next((_where(f, public[f]) for f in _WHERE_FIELDS if f in public), "")
    named = KIND_NAMES.get(name, name) + (f" · {what}" if what else "")
    return named + (f" ({where})" if where else "")
