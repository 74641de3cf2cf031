"""The model runtime: where the packaged MiniLM lies (model_path), picking and
opening an encoder (model_loader), the ONNX export and its encoder, and a cache of
query vectors. No store module is imported here."""

from __future__ import annotations

import threading

_warm_up = threading.Lock()
_warm_up_started: set[str | None] = set()


def warm_up_in_background(model: str | None = None) -> None:
    """Open `model`'s encoder (model_loader.encoder) on a daemon thread, once per process
    and model. The loader is imported on that thread too: the dashboard calls this
    before its first paint, so the model loads beside the pages' imports, and the
    page's own imports wait for neither. A failure is left for the first query that
    needs the model to raise."""
    with _warm_up:
        if model in _warm_up_started:
            return
        _warm_up_started.add(model)

    def load() -> None:
        from connectors.embedding import model_loader

        try:
            model_loader.encoder(model)
        except Exception:  # the query that needs the model reports it
            pass

    threading.Thread(target=load, name="memlens-encoder-warm-up", daemon=True).start()
