"""Store settings that name a server path: only under the directories the operator
allowed (connectors/common/allowed.py, through the registry), and nothing is created or
converted in a file or folder memlens did not make: a SQLite database of someone
else's, a folder that is no Qdrant or Chroma store, a Mem0 config that is not one."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from connectors.base import InvalidRequest, StoreUnavailable
from connectors.embedded.factories import open_demo_store, open_store
from connectors.registry import check_visitor_settings, create_store


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture
def foreign_sqlite(tmp_path) -> Path:
    """Somebody's own SQLite database, in rollback-journal mode."""
    path = tmp_path / "app.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE people (name TEXT)")
    db.execute("INSERT INTO people VALUES ('ana')")
    db.commit()
    db.close()
    return path


def test_a_foreign_sqlite_file_is_refused_and_left_as_it_was(foreign_sqlite):
    before = snapshot(foreign_sqlite.parent)
    with pytest.raises(StoreUnavailable, match="is not a memlens store .* changed nothing in this file"):
        open_store(str(foreign_sqlite))
    assert snapshot(foreign_sqlite.parent) == before  # no tables added, no -wal, no -shm
    db = sqlite3.connect(foreign_sqlite)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")] == ["people"]


def test_a_file_that_is_no_database_is_refused_unchanged(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping list\n" * 100)
    before = snapshot(tmp_path)
    with pytest.raises(StoreUnavailable, match="not a memlens store|cannot be opened as a SQLite file"):
        open_store(str(notes))
    assert snapshot(tmp_path) == before


def test_a_memlens_store_still_opens(demo_store, demo_dir):
    store = open_store(str(demo_dir / "demo.sqlite"))
    assert store.query("Which UI theme does the user prefer?", user_id="sam", k=1).hits[0].memory_id == "sam-02"


# ------------------------------------------------------------------ where a visitor may point


@pytest.mark.parametrize(
    "store,setting",
    [
        ("embedded", "db_path"),
        ("qdrant", "path"),
        ("chroma", "path"),
        ("lancedb", "path"),
        ("mem0", "config"),
        ("http_json", "config_path"),
    ],
)
def test_a_path_outside_the_allowed_directories_is_refused_before_anything_opens(tmp_path, store, setting):
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data.mkdir()
    elsewhere.mkdir()
    (elsewhere / "thing").mkdir()
    before = snapshot(elsewhere)
    environ = {"MEMLENS_DATA_DIR": str(data)}
    with pytest.raises(InvalidRequest, match=rf"setting {setting} = .*only under the directories its operator allowed"):
        create_store(store, {setting: str(elsewhere / "thing")}, visitor_environ=environ)
    assert snapshot(elsewhere) == before


def test_allowed_are_the_data_directory_the_configured_paths_and_the_allowlist(tmp_path):
    data, configured, extra, other = (tmp_path / name for name in ("data", "qdrant", "extra", "other"))
    for folder in (data, configured, extra, other):
        folder.mkdir()
    environ = {
        "MEMLENS_DATA_DIR": str(data),
        "MEMLENS_QDRANT_PATH": str(configured),
        "MEMLENS_ALLOWED_PATHS": f"{extra}{os.pathsep}{tmp_path / 'more'}",
    }
    for allowed in (data / "store.sqlite", configured, configured / "sub", extra / "x.toml"):
        assert check_visitor_settings("chroma", {"path": str(allowed)}, environ)["path"] == str(allowed.resolve())
    with pytest.raises(InvalidRequest):
        check_visitor_settings("chroma", {"path": str(other)}, environ)
    with pytest.raises(InvalidRequest):  # .. does not climb out
        check_visitor_settings("chroma", {"path": str(data / ".." / "other")}, environ)
    (data / "link").symlink_to(other)
    with pytest.raises(InvalidRequest):  # nor does a symlink pointing out
        check_visitor_settings("chroma", {"path": str(data / "link")}, environ)


# ------------------------------------------------------------------ folders that are no store


def test_a_folder_that_is_no_chroma_store_is_refused_without_writing(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8")
    before = snapshot(folder)
    with pytest.raises(StoreUnavailable, match="is not a Chroma persistent folder"):
        create_store("chroma", {"path": str(folder)})
    assert snapshot(folder) == before and sorted(p.name for p in folder.iterdir()) == ["cat.jpg"]


def test_a_folder_that_is_no_qdrant_store_is_refused_without_writing(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(StoreUnavailable, match="is not a Qdrant local folder"):
        create_store("qdrant", {"path": str(folder)})
    assert sorted(p.name for p in folder.iterdir()) == ["cat.jpg"]  # no .lock, no meta.json


# ------------------------------------------------------------------ Mem0 configs that are not one


@pytest.mark.parametrize(
    "content,says",
    [
        ({"name": "my-app", "version": 3}, "names no vector_store"),
        ({}, "names no vector_store"),
        ({"vector_store": {"provider": "qdrant", "config": {"collection_name": "m"}}}, "names no path, url, host or client"),
    ],
)
def test_a_file_that_is_no_usable_mem0_config_is_refused_without_mem0s_default_folder(tmp_path, monkeypatch, content, says):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "settings.json"
    config.write_text(json.dumps(content))
    before = snapshot(tmp_path)
    with pytest.raises(InvalidRequest, match=says):
        create_store("mem0", {"config": str(config)})
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------ a read-only data directory


def test_the_demo_store_in_a_read_only_data_directory_is_opened_read_only(demo_store, demo_dir, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    source, target = sqlite3.connect(demo_dir / "demo.sqlite"), sqlite3.connect(data / "demo.sqlite")
    with target:
        source.backup(target)
    source.close()
    target.close()
    before = snapshot(data)
    as_root = os.geteuid() == 0  # root writes through file modes: make the folder immutable instead
    subprocess.run(["chattr", "+i", str(data)], check=True) if as_root else data.chmod(0o555)
    try:
        store = open_demo_store(data)
        assert store.read_only
        assert store.query("Which UI theme does the user prefer?", user_id="sam", k=1).hits[0].memory_id == "sam-02"
        with pytest.raises(InvalidRequest, match="open read-only"):
            store.feedback("sam-02", "positive")
        store.close()
    finally:
        subprocess.run(["chattr", "-i", str(data)], check=True) if as_root else data.chmod(0o755)
    assert snapshot(data) == before


def test_a_read_only_data_directory_without_a_demo_store_names_the_directory_and_variable(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    as_root = os.geteuid() == 0
    subprocess.run(["chattr", "+i", str(data)], check=True) if as_root else data.chmod(0o555)
    try:
        with pytest.raises(StoreUnavailable, match=rf"The data directory {data} cannot be written .* MEMLENS_DATA_DIR"):
            open_demo_store(data)
    finally:
        subprocess.run(["chattr", "-i", str(data)], check=True) if as_root else data.chmod(0o755)
