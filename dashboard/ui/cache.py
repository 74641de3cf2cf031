"""The only module that calls st.cache_*: opened stores, the label store, the model.

Pages never open a store or a database themselves; they ask here, so a rerun (a
floor move, a label click) reuses what is already open.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future

import streamlit as st

from connectors.base import MemoryStore, create_store, data_dir
from dashboard.labels import LabelStore


def open_store(name: str, config_json: str) -> MemoryStore:
    """One open store per (name, config, data dir) for the whole server process.

    A ConnectorError propagates and is not cached, so fixing the config retries."""
    return _open_store(name, config_json, str(data_dir()))


@st.cache_resource(show_spinner=False)
def _open_store(name: str, config_json: str, data_dir_key: str) -> MemoryStore:
    return create_store(name, json.loads(config_json))


def label_store() -> LabelStore:
    """The label store in the data directory (MEMLENS_DATA_DIR), opened once."""
    return _label_store(str(data_dir() / "labels.sqlite"))


@st.cache_resource(show_spinner=False)
def _label_store(path: str) -> LabelStore:
    return LabelStore(path)


@st.cache_resource(show_spinner=False)
def model_warmup() -> Future:
    """Start loading the embedding model in the background at first page view, so
    the page paints at once and the model is usually ready by the first query."""
    from connectors import embedding

    future: Future = Future()

    def load() -> None:
        try:
            embedding.load_model()
            future.set_result(True)
        except Exception as exc:  # reported when a query needs the model
            future.set_exception(exc)

    threading.Thread(target=load, name="memlens-model-warmup", daemon=True).start()
    return future
