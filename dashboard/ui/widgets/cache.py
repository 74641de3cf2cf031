"""The only module that calls st.cache_*: opened stores, the label store, the model,
saved runs' answers, judged sets and the turn rules fitted on the Calibrate page.

Pages never open a store or a database themselves; they ask here, so a rerun (a
floor move, a label click) reuses what is already open.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from connectors.base import MemoryStore
from connectors.common.paths import data_dir
from connectors.registry import check_visitor_settings, create_store
from dashboard.database import AppDatabase, app_database_target
from dashboard.database.connection import LABELS_URL_ENV
from dashboard.database.model import LabelStoreError

# Every page imports this module before its first paint (see dashboard/views/navigation.py): the
# label-file parser, the judged sets and the Monitor's DuckDB relation (with numpy,
# pandas and pyarrow) are imported when first used, not here.
if TYPE_CHECKING:
    from dashboard.calibration.label_files import LabelFile
    from dashboard.calibration.turn_fit import RuleComparison
    from dashboard.database.runs import QueryOutcome, RunInfo
    from dashboard.evaluation.judged_sets import JudgedSet
    from dashboard.monitoring.relation import LogSet


def open_store(name: str, config_json: str) -> MemoryStore:
    """One open store per (name, config, data dir) for the whole server process.

    The settings are a visitor's: they are checked against what the operator
    allows on every run (a store opened before the operator narrowed the
    allowlist is not handed out from the cache). A ConnectorError propagates and
    is not cached, so fixing the config retries."""
    operator_settings_loaded()
    config = check_visitor_settings(name, json.loads(config_json), os.environ)
    return _open_store(name, json.dumps(config, sort_keys=True, default=str), str(data_dir()))


@st.cache_resource(show_spinner=False)
def _open_store(name: str, config_json: str, data_dir_key: str) -> MemoryStore:
    return create_store(name, json.loads(config_json), visitor_environ=os.environ)


def operator_settings_loaded() -> None:
    """Load .streamlit/secrets.toml, whose root-level keys Streamlit copies into
    os.environ: the allowlists the connectors check (MEMLENS_LANGGRAPH_FACTORIES,
    MEMLENS_ALLOWED_PATHS, ...) may be set there instead of the environment."""
    try:
        st.secrets.load_if_toml_exists()
    except Exception:  # a broken secrets.toml is Streamlit's own error to show
        pass


def app_database() -> AppDatabase:
    """The app database, opened once: MEMLENS_LABELS_URL (st.secrets or the
    environment; a PostgreSQL URL or key=value string, or a SQLite path), else
    labels.sqlite in the data directory (MEMLENS_DATA_DIR). A database that cannot
    be reached, or a MEMLENS_LABELS_URL that is none of those, raises
    LabelStoreError, which is not cached, so the next rerun tries again."""
    return _app_database(_label_target())


def labels_setting_error() -> str | None:
    """What is wrong with MEMLENS_LABELS_URL as configured, without connecting to
    anything (every page shows it, not only the pages that open the app database)."""
    try:
        _label_target()
    except LabelStoreError as exc:
        return str(exc)
    return None


def _labels_environ() -> dict[str, str]:
    environ = dict(os.environ)
    try:
        if LABELS_URL_ENV in st.secrets:
            environ[LABELS_URL_ENV] = str(st.secrets[LABELS_URL_ENV])
    except Exception:  # no secrets.toml: the common case
        pass
    return environ


def _label_target() -> str:
    return app_database_target(_labels_environ(), data_dir())


def run_outcomes(db: AppDatabase, info: RunInfo) -> list[QueryOutcome]:
    """A run's answers, read and decoded once per run version: the Quality page reads
    a run's 2,000 answers (20,000 hits) for its figures, again for the comparison and
    for Calibrate, on every rerun. A run is keyed with its progress, so a resumed
    run is read again; the list is shared, read-only."""
    return _run_outcomes(_label_target(), info.run_id, info.done, info.finished_at, db)


@st.cache_resource(show_spinner=False, max_entries=16)
def _run_outcomes(target: str, run_id: str, done: int, finished_at: str | None, _db: AppDatabase) -> list[QueryOutcome]:
    return _db.runs.outcomes(run_id)


def judged_set(db: AppDatabase, name: str, content_hash: str) -> JudgedSet | None:
    """A kept judged set at one version (a version never changes), read once."""
    try:
        return _judged_set(_label_target(), name, content_hash, db)
    except _NotKept:
        return None


@st.cache_resource(show_spinner=False, max_entries=16)
def _judged_set(target: str, name: str, content_hash: str, _db: AppDatabase) -> JudgedSet | None:
    found = _db.judged_sets.load(name, content_hash)
    if found is None:
        # A set that is gone may be kept again under this name and version: ask again next time.
        raise _NotKept
    return found


class _NotKept(Exception):
    pass


@st.cache_resource(show_spinner=False)
def _app_database(target: str) -> AppDatabase:
    return AppDatabase(target)


def parsed_label_file(content: bytes, name: str) -> LabelFile:
    """An uploaded label file, parsed once per content: a rerun (a floor list edit,
    a cost change) must not parse 200,000 rows again. Keyed by a hash of the bytes
    and the file name (which the errors quote); the result is shared and read-only."""
    return _parsed_label_file(hashlib.sha256(content).hexdigest(), name, content)


def parse_label_bytes(content: bytes, *, source: str) -> LabelFile:
    from dashboard.calibration.label_files import parse_label_bytes as parse

    return parse(content, source=source)


@st.cache_resource(show_spinner=False, max_entries=8)
def _parsed_label_file(digest: str, name: str, _content: bytes) -> LabelFile:
    # A LabelFileError propagates and is not cached: the page shows it each run.
    return parse_label_bytes(_content, source=name)


def rule_comparison(labels: LabelFile, mode: str, target: float) -> RuleComparison:
    """The held-out comparison of the turn rules with the single floor on these labels
    (calibration/turn_fit.py), at the settings `memlens calibrate --rule` uses by
    default (its resamples, seed and top ratio), so the page's floor file is the
    command's. Fitted once per labels, mode and target: a slider move or a rerun
    reuses it. Keyed by what the fit reads (each row's score, label, turn and rank);
    a CalibrationError propagates and is not cached."""
    import numpy as np

    data = labels.labelled_scores()
    digest = hashlib.sha256(data.scores.tobytes() + data.relevant.tobytes())
    if data.turn is not None:
        digest.update(data.turn.tobytes())
    digest.update(np.array([row.rank or 0 for row in labels.rows], dtype=np.int64).tobytes())
    return _rule_comparison(digest.hexdigest(), mode, float(target), labels)


@st.cache_resource(show_spinner=False, max_entries=8)
def _rule_comparison(digest: str, mode: str, target: float, _labels: LabelFile) -> RuleComparison:
    from dashboard.calibration.sweep import DEFAULT_SEED
    from dashboard.calibration.turn_fit import DEFAULT_TOP_RATIO, compare_rules, turn_labels

    return compare_rules(turn_labels(_labels, DEFAULT_TOP_RATIO), mode, target, resamples=None, seed=DEFAULT_SEED)


def open_logs(paths: list[str]) -> LogSet:
    from dashboard.monitoring.relation import open_logs as open_relation

    return open_relation(paths)


def monitor_logs(files: list[tuple[str, bytes]]) -> LogSet:
    """Uploaded logs as the monitor's relation and turns, built once per content: a
    floor move or a window pick reruns SQL over the cached turns, never re-reads
    the files. A LogFormatError propagates and is not cached."""
    digest = hashlib.sha256()
    for name, content in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return _monitor_logs(digest.hexdigest(), files)


# The upload folder of each cached relation, removed with the cache entry that made
# it (evicted by a fifth upload, or cleared): ten uploads leave at most four folders.
_upload_folders: dict[int, Path] = {}


def _release_monitor_logs(logs: LogSet) -> None:
    folder = _upload_folders.pop(id(logs), None)
    try:
        logs.con.close()
    except Exception:  # a connection already closed: nothing left to release
        pass
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@st.cache_resource(show_spinner=False, max_entries=4, on_release=_release_monitor_logs)
def _monitor_logs(digest: str, _files: list[tuple[str, bytes]]) -> LogSet:
    from dashboard.logs.log_files import LogFormatError

    # DuckDB reads files: the uploads go to a folder of their own, kept while the
    # cached relation (which scans them) lives, and removed when it is released
    folder = Path(tempfile.mkdtemp(prefix="memlens-monitor-"))
    try:
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
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # nothing is cached, so nothing else would remove it
        raise
    logs.issues = [dataclasses.replace(issue, file=names.get(issue.file, issue.file)) for issue in logs.issues]
    logs.files = [names[path] for path in paths]
    _upload_folders[id(logs)] = folder
    return logs


@st.cache_resource(show_spinner=False)
def monitor_demo_logs() -> LogSet:
    """The Monitor page's demo: 30 synthetic days with two known changes."""
    from dashboard.monitoring.synthetic import DEMO_LOG, synthetic_log, write_daily

    folder = Path(tempfile.mkdtemp(prefix="memlens-monitor-demo-"))
    paths = write_daily(synthetic_log(**DEMO_LOG), folder)  # type: ignore[arg-type]  # DEMO_LOG holds ints only
    return open_logs([str(p) for p in paths])
