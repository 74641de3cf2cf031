"""Shared fixtures. Every test runs offline against a temporary data directory."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["MEM0_TELEMETRY"] = "False"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ.pop("MEMORY_SCORE_FLOOR", None)
# One ONNX export of the model for every test and every server a test starts
# (exports are keyed by the model's files, so sharing across runs is safe): the
# suite must not pay an export per data directory. A clean machine exports once.
os.environ.setdefault("MEMLENS_MODEL_CACHE", str(Path(tempfile.gettempdir()) / "memlens-test-model-cache"))

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "views" / "navigation.py")  # the script each visit runs (app.py serves it)
LABEL_PAGE = str(ROOT / "dashboard" / "views" / "label.py")


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory) -> Path:
    """One demo store for the whole run: encoding the demo memories once is enough."""
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="session")
def demo_store(demo_dir):
    from connectors.embedded.factories import open_demo_store

    store = open_demo_store(demo_dir)
    yield store
    store.close()


@pytest.fixture
def data_dir(tmp_path, monkeypatch, demo_dir) -> Path:
    """A fresh MEMLENS_DATA_DIR (labels start empty) that shares the session's demo
    store file, so each app test does not re-encode the demo memories."""
    (tmp_path / "demo.sqlite").symlink_to(demo_dir / "demo.sqlite")
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path))
    return tmp_path


REVIEWER = "reviewer"


@pytest.fixture
def named_reviewer(monkeypatch) -> str:
    """The reviewer named by the deployment (MEMLENS_REVIEWER), as the pages' tests
    that label expect; with no name at all, Inspect asks first (test_session_carry.py).
    A module labelling throughout says ``pytestmark = pytest.mark.usefixtures("named_reviewer")``."""
    monkeypatch.setenv("MEMLENS_REVIEWER", REVIEWER)
    return REVIEWER


def _app_test_maker(script):
    """make(**session_state): an AppTest of `script`, the session state set first."""
    from streamlit.testing.v1 import AppTest

    def make(**session_state):
        at = AppTest.from_file(script, default_timeout=180)
        for key, value in session_state.items():
            at.session_state[key] = value
        return at

    return make


@pytest.fixture
def app(data_dir):
    """An AppTest of the whole app (navigation included) on a fresh data dir."""
    return _app_test_maker(APP)


@pytest.fixture
def label_page(data_dir, demo_store):
    """An AppTest of the Label page alone (views/label.py, without the navigation)
    on a fresh data dir; session state given as keyword arguments is set first."""
    return _app_test_maker(LABEL_PAGE)


def _memorysync_server_module():
    """tests/connectors/memorysync_server.py, importable from any test directory."""
    import importlib.util
    import sys

    name = "memorysync_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "connectors" / "memorysync_server.py")
        assert spec is not None and spec.loader is not None  # a .py file always has both
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def memorysync_module():
    """tests/connectors/memorysync_server.py, for a test that starts a server of its own.
    (A fixture, not `from conftest import ...`: which conftest that name finds
    depends on which test directories were collected first.)"""
    return _memorysync_server_module()


@pytest.fixture(scope="session")
def memorysync_session_server(demo_store, demo_dir, tmp_path_factory):
    """One MemorySync look-alike on 127.0.0.1 for the run, over a copy of the demo store."""
    server = _memorysync_server_module().serve_copy_of(demo_dir / "demo.sqlite", tmp_path_factory.mktemp("memorysync"))
    yield server
    server.stop()


@pytest.fixture
def memorysync_server(memorysync_session_server):
    """The loopback MemorySync server with no faults queued and no requests recorded."""
    memorysync_session_server.reset()
    yield memorysync_session_server
    memorysync_session_server.reset()


@pytest.fixture
def ms_env(monkeypatch, memorysync_server):
    """The sidebar's MemorySync settings, as a deployment would set them."""
    monkeypatch.setenv("MEMORYSYNC_BASE_URL", memorysync_server.url)
    monkeypatch.setenv("MEMORYSYNC_API_KEY", memorysync_server.api_key)
    monkeypatch.setenv("MEMORYSYNC_END_USER_ID", "sam")
    monkeypatch.setenv("MEMORYSYNC_MAX_RETRIES", "0")
    return memorysync_server


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL server (initdb + pg_ctl on a temporary directory, a
    loopback port) for the tests that store labels, judged sets and runs in it; each
    test takes a database of its own with `new_database()`. Tests that freeze the
    server define a `postgres` of their own."""
    from postgres_server import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def export_folder(tmp_path_factory):
    """The packaged model's ONNX export in a folder of its own (what
    `python -m connectors.embedding.onnx_export --out DIR` writes), away from the
    model cache: what a torch-free agent names as its store's model."""
    from connectors.embedding import model_loader, onnx_export

    return onnx_export.export(model_loader.packaged_model_path(), tmp_path_factory.mktemp("minilm-onnx"))
