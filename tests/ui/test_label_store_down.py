"""Every page with the label database down, or a data directory the server cannot
write: a message naming what failed (and what to change), never a traceback; the
parts that need no label store keep working; a password in the URL never shows."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from markdown_text import seen

THEME = "Which UI theme does the user prefer?"
DOWN_URL = "postgresql://memlens:hunter2secret@127.0.0.1:1/labels?connect_timeout=1"
UPLOAD = b'{"memory_id": "m1", "score": 0.8, "label": "relevant"}\n{"memory_id": "m2", "score": 0.2, "label": "not_relevant"}\n'
PAGES = ("views/inspect.py", "views/calibrate.py", "views/label.py", "views/quality.py")


def shown(at) -> str:
    return "\n".join(str(getattr(node, "proto", "")) for node in at._tree)


def errors(at) -> str:
    return "\n".join(seen(e.value) for e in at.error)


@pytest.mark.parametrize("page", PAGES)
def test_a_label_database_that_is_down_is_a_message_on_every_page(app, monkeypatch, page):
    monkeypatch.setenv("MEMLENS_LABELS_URL", DOWN_URL)
    at = app(query=THEME, label_reviewer="ana")
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert "label database at postgresql://memlens:***@127.0.0.1:1/labels" in errors(at)
    assert "hunter2secret" not in shown(at)


@pytest.fixture
def read_only_data_dir(data_dir: Path):
    """The data directory made unwritable after the demo store link is in it. Root
    writes through file modes, so as root the directory is made immutable instead."""
    as_root = os.geteuid() == 0
    if as_root:
        subprocess.run(["chattr", "+i", str(data_dir)], check=True)
    else:
        data_dir.chmod(0o555)
    try:
        yield data_dir
    finally:
        if as_root:
            subprocess.run(["chattr", "-i", str(data_dir)], check=True)
        else:
            data_dir.chmod(0o755)


def test_a_read_only_data_directory_names_the_directory_and_the_variable(app, read_only_data_dir):
    for page in ("views/calibrate.py", "views/label.py", "views/quality.py"):
        at = app(label_reviewer="ana")
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert str(read_only_data_dir) in errors(at) and "MEMLENS_DATA_DIR" in errors(at), page


def test_inspect_without_labels_and_calibrate_from_an_upload_work_on_a_read_only_data_directory(
    app, read_only_data_dir
):
    at = app(query=THEME)
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["result"].hits  # the query ran and the hits are shown
    assert "MEMLENS_DATA_DIR" in errors(at)  # labelling says why it is unavailable
    at.switch_page("views/calibrate.py").run()
    at.radio(key="calibrate_source").set_value("Upload a file").run()
    at.file_uploader(key="calibrate_upload").set_value(("team.jsonl", UPLOAD, "application/jsonl")).run()
    assert not at.exception, at.exception
    assert at.get("plotly_chart")  # calibrated from the upload


HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("holding", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
print("released", flush=True)
"""


def test_a_label_file_held_by_another_process_shows_not_saved_and_the_retry_saves(app, data_dir):
    import sys

    at = app(query=THEME)
    at.run()
    first = at.session_state["result"].hits[0].memory_id
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir / "labels.sqlite")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "holding"
        at.button(key=f"relevant_{first}").click().run()
        assert not at.exception, at.exception
        assert "was not saved" in errors(at) and "locked by another process" in errors(at)
        assert any("not saved" in m.value and "click again" in m.value for m in at.markdown)
    finally:
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
        holder.wait(30)
    at.button(key=f"relevant_{first}").click().run()
    assert not at.error and any("✅ relevant" in m.value for m in at.markdown)
    assert not any("not saved" in m.value for m in at.markdown)


@pytest.fixture
def postgres():
    from postgres_server import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()


def test_a_frozen_postgres_label_click_says_not_saved_and_other_pages_keep_working(app, monkeypatch, postgres):
    monkeypatch.setenv("MEMLENS_LABELS_URL", postgres.new_database())
    at = app(query=THEME)
    at.run()
    first = at.session_state["result"].hits[0].memory_id
    postgres.freeze()
    try:
        at.button(key=f"relevant_{first}").click().run()
        assert not at.exception, at.exception
        assert "was not saved" in errors(at) and "did not answer within" in errors(at)
        at.switch_page("views/browse.py").run()  # a page that needs no label store
        assert not at.exception and not at.error
        assert at.dataframe  # the store's memories are listed
    finally:
        postgres.thaw()
    again = app(query=THEME)  # the reviewer opens Inspect again and retries the click
    again.run()
    again.button(key=f"relevant_{first}").click().run()
    assert not again.error and any("✅ relevant" in m.value for m in again.markdown)
