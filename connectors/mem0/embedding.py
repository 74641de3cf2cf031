"""Mem0's huggingface embedder, run on memlens's own encoder (ONNX, no torch).

Mem0's ``HuggingFaceEmbedding`` loads sentence-transformers (torch) when a Memory
is built: seconds before the first search. For a local sentence-transformers model
that ends in a Normalize module (so Mem0's vectors are unit length already), this
class gives Mem0 the same vectors from connectors/embedding/model_loader.py instead;
for an ONNX export folder (which Mem0's own class cannot load) it is the only way, with
no torch installed at all. Anything else (a text-embeddings-inference URL,
model_kwargs, a model without Normalize) keeps Mem0's own class.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from connectors.embedding import model_loader as embedding
from connectors.embedding import onnx_export

_factory_lock = threading.Lock()


def can_take_over(embedder: dict[str, Any]) -> bool:
    """Whether a Mem0 embedder config is one this module reproduces exactly."""
    config = embedder.get("config") or {}
    if embedder.get("provider", "huggingface") != "huggingface" or config.get("huggingface_base_url"):
        return False
    if config.get("model_kwargs") or not config.get("model"):
        return False
    path = Path(embedding.resolve_model_path(config["model"]))
    if onnx_export.is_exported(path):
        # memlens's own export folder (`onnx_export --out DIR`, what a torch-free agent
        # runs): Mem0's class cannot load it, and memlens's encoder gives its unit-length vectors
        return True
    modules = path / "modules.json"
    try:
        types = [m.get("type", "") for m in json.loads(modules.read_text(encoding="utf-8"))]
    except (OSError, ValueError):
        return False
    return bool(types) and types[-1].endswith("Normalize")


def __getattr__(name: str):
    # Mem0's factory imports a class by dotted name; the class subclasses Mem0's
    # base, so it is built on first use (importing this module must not import mem0).
    if name == "MemlensEmbedding":
        globals()[name] = _embedder_class()
        return globals()[name]
    raise AttributeError(name)


def _embedder_class():
    from mem0.embeddings.base import EmbeddingBase

    class MemlensEmbedding(EmbeddingBase):
        """Mem0's embed/embed_batch over connectors.embedding.model_loader (ONNX when it can)."""

        def __init__(self, config=None):
            super().__init__(config)
            self.config.embedding_dims = self.config.embedding_dims or embedding.DIMENSIONS

        def embed(self, text, memory_action=None):
            return embedding.encode([text], model=self.config.model)[0].tolist()

        def embed_batch(self, texts, memory_action="add"):
            return [v.tolist() for v in embedding.encode(list(texts), model=self.config.model)] if texts else []

    return MemlensEmbedding


@contextmanager
def memlens_embedder():
    """While a Memory is built, Mem0's factory makes our class for "huggingface".

    Mem0 has no way to pass an embedder object in, and its config accepts only its
    own provider names; the swap is undone on exit and held under a lock so a
    Memory built by another thread meanwhile is not affected differently."""
    from mem0.utils.factory import EmbedderFactory

    with _factory_lock:
        original = EmbedderFactory.provider_to_class["huggingface"]
        EmbedderFactory.provider_to_class["huggingface"] = f"{__name__}.MemlensEmbedding"
        try:
            yield
        finally:
            EmbedderFactory.provider_to_class["huggingface"] = original
