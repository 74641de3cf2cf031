"""Every page with the label database down, or a data directory the server cannot
write: a message naming what failed (and what to change), never a traceback; the
parts that need no label store keep working; a password in the URL never shows."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

THEME = "Which UI theme does the user prefer?"
DOWN_URL = "postgresql://memlens:hunter2secret@127.0.0.1:1/labels?connect_timeout=1"
UPLOAD = b'{"memory_id": "m1", "score": 0.8, "label": "relevant"}\n{"memory_id": "m2", "score": 0.2, "label": "not_relevant"}\n'
PAGES = ("views/inspect.py", "views/calibrate.py", "views/label.py", "views/quality.py")


def shown(at) -> str:
    return "\n".join(str(getattr(node, "proto", "")) for node in at._tree)


def errors(at) -> str:
    return "\n".join(e.value for e in at.error)


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
