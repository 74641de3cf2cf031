"""A Mem0 store whose history was written through Mem0's own API: infer=False adds,
an update and a delete, with the packaged MiniLM and a local Qdrant folder."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from connectors.embedding import model_loader as embedding

PIZZA_BEFORE = "Likes cheese pizza"
PIZZA_AFTER = "Loves cheese pizza with olives"
CAT = "Has a cat named Miso"
LISBON = "Lives in Lisbon"
CAR_BEFORE = "Drives a red car"
CAR_AFTER = "Drives a blue car"


def write_history(root: Path) -> tuple[Path, dict[str, str]]:
    """(the config file, {"pizza": id, "cat": id, "lisbon": id, "car": id}); the writer's Qdrant
    client is closed, so the app can open the same folder."""
    os.environ.setdefault("MEM0_DIR", str(root / "mem0-dir"))
    from mem0 import Memory

    from connectors.mem0.library import offline_config

    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "history_demo", "path": str(root / "qdrant"), "on_disk": True},
        },
        "embedder": {"provider": "huggingface", "config": {"model": embedding.packaged_model_path()}},
        "history_db_path": str(root / "history.db"),
    }
    config_file = root / "mem0.yaml"
    config_file.write_text(yaml.safe_dump(config))
    memory = Memory.from_config(offline_config(config))

    def add(text: str) -> str:
        result = memory.add(text, user_id="sam", infer=False)
        return result["results"][0]["id"]

    ids = {"pizza": add(PIZZA_BEFORE), "lisbon": add(LISBON), "cat": add(CAT), "car": add(CAR_BEFORE)}
    memory.update(ids["pizza"], text=PIZZA_AFTER)
    memory.delete(ids["cat"])
    memory.update(ids["car"], text=CAR_AFTER)  # one memory through all three writes
    memory.delete(ids["car"])
    memory.vector_store.client.close()
    return config_file, ids
