"""The only module that calls st.cache_*: opened stores, the label store, the model.

Pages never open a store or a database themselves; they ask here, so a rerun (a
floor move, a label click) reuses what is already open.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path

import streamlit as st

from connectors.base import MemoryStore
from connectors.paths import data_dir
from connectors.registry import create_store
from dashboard.calibration.label_files import LabelFile, parse_label_bytes
from dashboard.labels import label_store_target, open_label_store
from dashboard.labels.store import LABELS_URL_ENV, LabelStore
from dashboard.logs.log_files import LogFormatError
from dashboard.monitoring.relation import LogSet, open_logs
from dashboard.monitoring.synthetic import DEMO_LOG, synthetic_log, write_daily


def open_store(name: str, config_json: str) -> MemoryStore:
    """One open store per (name, config, data dir) for the whole server process.

    A ConnectorError propagates and is not cached, so fixing the config retries."""
    return _open_store(name, config_json, str(data_dir()))


@st.cache_resource(show_spinner=False)
def _open_store(name: str, config_json: str, data_dir_key: str) -> MemoryStore:
    return create_store(name, json.loads(config_json))


def label_store() -> LabelStore:
    """The label store, opened once: MEMLENS_LABELS_URL (st.secrets or the
    environment; a PostgreSQL URL or a SQLite path), else labels.sqlite in the data
    directory (MEMLENS_DATA_DIR). A database that cannot be reached raises
    LabelStoreError, which is not cached, so the next rerun tries again."""
    environ = dict(os.environ)
    try:
        if LABELS_URL_ENV in st.secrets:
            environ[LABELS_URL_ENV] = str(st.secrets[LABELS_URL_ENV])
    except Exception:  # no secrets.toml: the common case
        pass
    return _label_store(label_store_target(environ, data_dir()))


@st.cache_resource(show_spinner=False)
def _label_store(target: str) -> LabelStore:
    return open_label_store(target)


def parsed_label_file(content: bytes, name: str) -> LabelFile:
    """An uploaded label file, parsed once per content: a rerun (a floor list edit,
    a cost change) must not parse 200,000 rows again. Keyed by a hash of the bytes
    and the file name (which the errors quote); the result is shared and read-only."""
    return _parsed_label_file(hashlib.sha256(content).hexdigest(), name, content)


@st.cache_resource(show_spinner=False, max_entries=8)
def _parsed_label_file(digest: str, name: str, _content: bytes) -> LabelFile:
    # A LabelFileError propagates and is not cached: the page shows it each run.
    return parse_label_bytes(_content, source=name)


@st.cache_resource(show_spinner=False)
def model_warmup() -> Future:
    """Start opening the embedding model in the background at first page view, so
    the page paints at once and the model is usually ready by the first query (on
    the ONNX path that is under a second; the first run on a machine also exports
    the model, which imports torch once)."""
    from connectors import embedding

    future: Future = Future()

    def load() -> None:
        try:
            embedding.encoder()
            future.set_result(True)
        except Exception as exc:  # reported when a query needs the model
            future.set_exception(exc)

    threading.Thread(target=load, name="memlens-model-warmup", daemon=True).start()
    return future


def monitor_logs(files: list[tuple[str, bytes]]) -> LogSet:
    """Uploaded logs as the monitor's relation and turns, built once per content: a
    floor move or a window pick reruns SQL over the cached turns, never re-reads
    the files. A LogFormatError propagates and is not cached."""
    digest = hashlib.sha256()
    for name, content in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return _monitor_logs(digest.hexdigest(), files)


@st.cache_resource(show_spinner=False, max_entries=4)
def _monitor_logs(digest: str, _files: list[tuple[str, bytes]]) -> LogSet:
    # DuckDB reads files: the uploads go to a folder of their own, kept while the
    # cached relation (which scans them) lives
    folder = Path(tempfile.mkdtemp(prefix="memlens-monitor-"))
    paths = []
    for index, (name, content) in enumerate(_files):
        path = folder / f"{index:03d}-{Path(name).name}"
        path.write_bytes(content)
        paths.append(str(path))
    # issues and errors name the file as the user knows it, not the copy
    names = {path: name for path, (name, _) in zip(paths, _files, strict=True)}
    try:
        logs = open_logs(paths)
    except LogFormatError as exc:
        message = str(exc)
        for copy, name in names.items():
            message = message.replace(copy, name)
        raise LogFormatError(message) from None
    logs.issues = [dataclasses.replace(issue, file=names.get(issue.file, issue.file)) for issue in logs.issues]
    logs.files = [names[path] for path in paths]
    return logs


@st.cache_resource(show_spinner=False)
def monitor_demo_logs() -> LogSet:
    """The Monitor page's demo: 30 synthetic days with two known changes."""
    folder = Path(tempfile.mkdtemp(prefix="memlens-monitor-demo-"))
    paths = write_daily(synthetic_log(**DEMO_LOG), folder)  # type: ignore[arg-type]  # DEMO_LOG holds ints only
    return open_logs([str(p) for p in paths])
