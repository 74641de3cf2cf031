"""Every page with the label database down, or a data directory the server cannot
write: a message naming what failed (and what to change), never a traceback; the
parts that need no label store keep working; a password in the URL never shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from demo_questions import THEME
from markdown_text import error_texts
from waiting import wait_for

# Labels here are saved under a named reviewer, as a deployment names one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("named_reviewer")


DOWN_URL = "postgresql://memlens:hunter2secret@127.0.0.1:1/labels?connect_timeout=1"
UPLOAD = b'{"memory_id": "m1", "score": 0.8, "label": "relevant"}\n{"memory_id": "m2", "score": 0.2, "label": "not_relevant"}\n'
PAGES = ("inspect.py", "calibrate.py", "label.py", "quality.py")


def shown(at) -> str:
    return "\n".join(str(getattr(node, "proto", "")) for node in at._tree)


def errors(at) -> str:
    return "\n".join(error_texts(at))


# What the page says while the label store holds off a server that stopped answering
# (it asks again once its 3 s timeout has passed).
HOLDING_OFF = "memlens asks it again after that"


def press_until_the_store_asks_again(press, timeout_s: float = 30.0):
    """``press()`` (a reviewer's click, returning the page after it) again until the
    page no longer says the store is holding off the server; the page then."""

    def answered():
        at = press()
        return None if HOLDING_OFF in errors(at) else at

    return wait_for(answered, timeout_s=timeout_s, what="the label store asking the resumed server again")


@pytest.mark.parametrize("page", PAGES)
def test_a_label_database_that_is_down_is_a_message_on_every_page(app, monkeypatch, page):
    monkeypatch.setenv("MEMLENS_LABELS_URL", DOWN_URL)
    at = app(query=THEME, label_reviewer="ana")
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert "label database at postgresql://memlens:***@127.0.0.1:1/labels" in errors(at)
    assert "hunter2secret" not in shown(at)


@pytest.fixture
def read_only_data_dir(data_dir: Path, demo_store):
    """The data directory made unwritable after the demo store link is in it (and
    the demo store built: a read-only directory cannot get one). Root
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
    for page in ("calibrate.py", "label.py", "quality.py"):
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
    assert "result" in at.session_state, errors(at)
    assert at.session_state["result"].hits  # the query ran and the hits are shown
    assert "MEMLENS_DATA_DIR" in errors(at)  # labelling says why it is unavailable
    at.switch_page("calibrate.py").run()
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
        at.switch_page("browse.py").run()  # a page that needs no label store
        assert not at.exception and not at.error
        assert at.dataframe  # the store's memories are listed
    finally:
        postgres.thaw()


    def click_on_a_fresh_inspect():  # the reviewer opens Inspect again and retries the click
        again = app(query=THEME)
        again.run()
        if HOLDING_OFF in errors(again):  # the page says so before any button is drawn
            return again
        return again.button(key=f"relevant_{first}").click().run()

    again = press_until_the_store_asks_again(click_on_a_fresh_inspect)
    assert not again.error and any("✅ relevant" in m.value for m in again.markdown)


@pytest.mark.parametrize("page", [*PAGES, "browse.py", "compare.py"])
def test_a_labels_url_that_names_no_database_is_an_error_on_every_page(app, monkeypatch, tmp_path, page):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMLENS_LABELS_URL", "mysql://memlens:hunter2secret@db/labels")
    at = app(query=THEME, label_reviewer="ana")
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert "MEMLENS_LABELS_URL is a mysql:// URL, which is not a label database memlens opens" in errors(at)
    assert "hunter2secret" not in shown(at)
    assert not list(tmp_path.glob("mysql*"))


def test_a_key_value_labels_url_is_postgresql_and_its_password_never_shows(app, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMLENS_LABELS_URL", "host=127.0.0.1 port=1 dbname=labels password=hunter2secret connect_timeout=1")
    at = app(label_reviewer="ana")
    at.switch_page("label.py").run()
    assert not at.exception, at.exception
    assert "label database at host=127.0.0.1 port=1 dbname=labels password=*** connect_timeout=1 cannot be reached" in errors(at)
    assert "hunter2secret" not in shown(at)
    assert not [p.name for p in tmp_path.iterdir() if "=" in p.name]  # no SQLite file named after the string


@pytest.fixture
def read_only_data_dir_with_its_own_demo_store(data_dir: Path, demo_store):
    """A data directory holding a real copy of the demo store (not a link into a
    writable folder), made unwritable, as a deployment's read-only volume is."""
    import sqlite3

    (data_dir / "demo.sqlite").unlink()
    source, target = sqlite3.connect(demo_store.path), sqlite3.connect(data_dir / "demo.sqlite")
    with target:
        source.backup(target)
    source.close()
    target.close()
    as_root = os.geteuid() == 0
    subprocess.run(["chattr", "+i", str(data_dir)], check=True) if as_root else data_dir.chmod(0o555)
    try:
        yield data_dir
    finally:
        subprocess.run(["chattr", "-i", str(data_dir)], check=True) if as_root else data_dir.chmod(0o755)


def test_inspect_queries_the_demo_store_kept_in_a_read_only_data_directory(app, read_only_data_dir_with_its_own_demo_store):
    folder = read_only_data_dir_with_its_own_demo_store
    before = sorted(p.name for p in folder.iterdir())
    at = app(query=THEME)
    at.run()
    assert not at.exception, at.exception
    assert "Cannot open the store" not in errors(at)
    assert at.session_state["result"].hits[0].memory_id == "sam-02"  # the theme memory, from the demo store
    # labelling is off, and the page says which directory and which variable
    assert str(folder) in errors(at) and "MEMLENS_DATA_DIR" in errors(at)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_the_label_page_comes_back_after_a_frozen_database_resumes_without_asking_the_name_again(
    label_page_on_postgres, postgres
):
    at = label_page_on_postgres
    at.button(key="label_skip").click().run()  # the server answers: saved
    assert "1 of 4 rows done by ana" in " ".join(str(p.proto) for p in at.get("progress"))
    postgres.freeze()
    try:
        at.button(key="label_relevant").click().run()
        assert not at.exception, at.exception
        assert "did not answer within 3 s" in errors(at) or "cannot be reached" in errors(at)
        assert at.button(key="label_retry")  # the page offers to try again, and keeps running
    finally:
        postgres.thaw()
    press_until_the_store_asks_again(lambda: at.button(key="label_retry").click().run())  # the same page
    assert not at.exception, at.exception
    assert errors(at).startswith("The label was not saved")  # the click that failed, said in the panel
    assert "1 of 4 rows done by ana" in " ".join(str(p.proto) for p in at.get("progress"))
    assert at.session_state["label_reviewer"] == "ana"  # the name is not asked again
    at.button(key="label_relevant").click().run()  # pressed again: saved
    assert "2 of 4 rows done by ana" in " ".join(str(p.proto) for p in at.get("progress"))
    assert not at.error


@pytest.fixture
def label_page_on_postgres(postgres, data_dir, demo_store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from dashboard.database import AppDatabase
    from dashboard.labels import sampling
    from dashboard.logs.retrieval_log import read_log

    url = postgres.new_database()
    db = AppDatabase(url)
    rows = read_log(Path(__file__).resolve().parents[2] / "demo_data" / "sample_log.jsonl").rows
    sampling.save_session(db, "frozen", rows, method="uniform", size=4, seed=1)
    db.close()
    monkeypatch.setenv("MEMLENS_LABELS_URL", url)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "dashboard" / "views" / "label.py"), default_timeout=180)
    at.session_state["label_reviewer"] = "ana"
    at.session_state["label_session"] = "frozen"
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_checks_before_every_pages_title_import_no_label_database_when_none_is_set():
    """navigation.py runs the access gate and the setting check before each page's title; with
    no password and no MEMLENS_LABELS_URL they must not import the label cache, the
    database modules or the store registry, which held a new server's first paint back."""
    code = (
        "import sys\n"
        "from dashboard.ui.widgets.access import account_menu, require_access, show_setting_errors\n"
        "require_access(); account_menu(); show_setting_errors()\n"
        "heavy = ('dashboard.database', 'dashboard.ui.widgets.cache', 'dashboard.ui.widgets.sidebar', 'connectors')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("MEMLENS_LABELS_URL", "MEMLENS_PASSWORD")}
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_the_gate_checks_the_setting_the_label_database_reads():
    from dashboard.database.connection import LABELS_URL_ENV
    from dashboard.ui.widgets import access

    assert access.LABELS_URL_ENV == LABELS_URL_ENV
