"""What a person calls a store (issue 34): kind, collection and where, never a secret,
for every store the registry lists."""

from __future__ import annotations

import pytest

from connectors.common.store_names import KIND_NAMES, store_name
from connectors.registry import REGISTRY, public_config


@pytest.mark.parametrize(
    "kind,settings,named",
    [
        ("chroma", {"url": "http://localhost:8000", "collection": "support_memories", "path": ""},
         "Chroma · support_memories (localhost:8000)"),
        ("chroma", {"path": "/srv/team/chroma", "collection": "memories"}, "Chroma · memories (chroma)"),
        ("qdrant", {"url": "https://user:hunter2@qdrant.internal:6333/?api-key=k", "collection": "mem"},
         "Qdrant · mem (qdrant.internal:6333)"),
        ("embedded", {"db_path": ""}, "Embedded · demo data"),
        ("embedded", {"db_path": "/data/team.sqlite", "half_life_hours": 72.0}, "Embedded · team.sqlite"),
        ("pgvector", {"url": "postgresql://u:secret@db/app", "table": "public.memories"}, "pgvector · public.memories"),
        ("memorysync", {"base_url": "https://api.example.io", "api_key": "sk-123"}, "MemorySync (api.example.io)"),
        ("lancedb", {"path": "/srv/lance", "table": "memories"}, "LanceDB · memories (lance)"),
    ],
)
def test_a_store_is_named_by_kind_collection_and_place_without_secrets(kind, settings, named):
    shown = store_name(kind, public_config(kind, settings))
    assert shown == named
    assert not {"secret", "hunter2", "sk-123", "api-key"} & set(shown.replace("(", " ").replace(")", " ").split())


def test_every_registered_store_kind_has_a_persons_name():
    assert set(REGISTRY) <= set(KIND_NAMES), f"add to KIND_NAMES: {sorted(set(REGISTRY) - set(KIND_NAMES))}"
