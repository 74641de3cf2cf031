"""Shared fixtures. Every test runs offline against a temporary data directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["MEM0_TELEMETRY"] = "False"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ.pop("MEMORY_SCORE_FLOOR", None)

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory) -> Path:
    """One demo store for the whole run: encoding the demo memories once is enough."""
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="session")
def demo_store(demo_dir):
    from connectors.embedded import open_demo_store

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


@pytest.fixture
def app(data_dir):
    """An AppTest of the whole app (navigation included) on a fresh data dir."""
    from streamlit.testing.v1 import AppTest

    def make(**session_state):
        at = AppTest.from_file(APP, default_timeout=180)
        for key, value in session_state.items():
            at.session_state[key] = value
        return at

    return make
