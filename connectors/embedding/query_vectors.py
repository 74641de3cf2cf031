"""Query embeddings for the vector-store connectors (Qdrant, Chroma), remembered
per (model, text): the Compare page sends one message to two collections built
with the same model, and re-running a message should not re-encode it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from connectors.embedding import model_loader as embedding

MAX_REMEMBERED = 512

_remembered: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_lock = threading.Lock()


def _key(text: str, model: str | None) -> tuple[str, str]:
    return (embedding.resolve_model_path(model), text)


def remember(texts: Iterable[str], model: str | None = None) -> None:
    """Encode the texts not yet remembered, in one batch (much faster than one by one)."""
    with _lock:
        missing = list(dict.fromkeys(t for t in texts if _key(t, model) not in _remembered))
    if not missing:
        return
    vectors = embedding.encode(missing, model=model)
    with _lock:
        for text, vector in zip(missing, vectors, strict=True):
            _remembered[_key(text, model)] = vector
        while len(_remembered) > MAX_REMEMBERED:
            _remembered.popitem(last=False)


def query_vector(text: str, model: str | None = None) -> list[float]:
    """The unit-length embedding of `text` as the list the clients take."""
    key = _key(text, model)
    with _lock:
        vector = _remembered.get(key)
        if vector is not None:
            _remembered.move_to_end(key)
    if vector is None:
        remember([text], model)
        with _lock:
            vector = _remembered[key]
    return vector.tolist()
