"""One `streamlit run` server per test module and one headless Chromium for the
whole e2e session.

The server runs the app exactly as `make run` does, on 127.0.0.1 and a free port,
with a fresh MEMLENS_DATA_DIR per module (the label database is created by the app
itself) and no network for the model. So each module starts from the same state,
whatever another module labelled, ran or saved; the tests of one module share it, in
their file's order. The data directory starts with a copy of the session's demo
store, so a server does not encode the demo memories again. Each test gets its own
browser context: a new Streamlit session, as a second reviewer opening the link.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from ports import free_port
from st_browser import copy_new_screenshots

ROOT = Path(__file__).resolve().parents[2]
# Screenshots go to an output folder (gitignored), so a test run leaves the tree clean;
# the committed ones in docs/screenshots are refreshed only on request:
# MEMLENS_UPDATE_SCREENSHOTS=1 (or `make screenshots`) copies this run's shots there.
SCREENSHOTS = ROOT / "tests" / "e2e" / "artifacts" / "screenshots"
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
UPDATE_SCREENSHOTS_ENV = "MEMLENS_UPDATE_SCREENSHOTS"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
# The first page view starts loading the embedding model and the first query waits
# for it; on a busy two-core machine that has taken well over a minute.
STARTUP_TIMEOUT_S = 180


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
            return response.status == 200 and response.read().strip() == b"ok"
    except OSError:
        return False


class Server:
    def __init__(self, url: str, data_dir: Path, log_path: Path, process: subprocess.Popen):
        self.url = url
        self.data_dir = data_dir
        self.log_path = log_path
        self.process = process

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def server(request, tmp_path_factory, demo_store) -> Iterator[Server]:
    """`streamlit run dashboard/app.py` on a free loopback port over this module's
    own data directory; stopped at the end of the module, and also when the start-up
    itself fails."""
    module = request.module.__name__.rpartition(".")[2]
    data_dir = tmp_path_factory.mktemp(f"e2e-{module}")
    copy_sqlite(Path(demo_store.path), data_dir / "demo.sqlite")
    # The operator of this test deployment allows store files under the tests'
    # temporary folders (the hostile service's TOML files are written there).
    allowed = {"MEMLENS_ALLOWED_PATHS": str(tmp_path_factory.getbasetemp())}
    with running_streamlit(data_dir, data_dir.parent / f"streamlit-{module}.log", allowed) as started:
        yield started


def copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file (SQLite's backup, not a byte copy that
    could catch a write half done)."""
    reader, writer = sqlite3.connect(source), sqlite3.connect(target)
    try:
        with writer:
            reader.backup(writer)
    finally:
        reader.close()
        writer.close()


@contextlib.contextmanager
def running_streamlit(
    data_dir: Path,
    log_path: Path,
    extra_env: dict[str, str] | None = None,
    extra_args: tuple[str, ...] = (),
    port: int | None = None,
):
    """A `streamlit run` process serving the app from `data_dir`, as `make run` starts
    it; `extra_env` adds deployment settings (a password, a label database URL)."""
    port = port or free_port()  # given when a setting (an OIDC redirect URI) must name it
    env = dict(os.environ)
    for inherited in ("MEMORY_SCORE_FLOOR", "MEMLENS_EMBEDDED_DB", "MEMLENS_REVIEWER"):
        env.pop(inherited, None)
    env.update(
        MEMLENS_DATA_DIR=str(data_dir),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MEM0_TELEMETRY="False",
        ANONYMIZED_TELEMETRY="False",
    )
    env.update(extra_env or {})
    command = [
        sys.executable, "-m", "streamlit", "run", "dashboard/app.py",
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        # Other work edits the source while the suite runs; a watcher would put a
        # "source changed" banner into the screenshots.
        "--server.fileWatcherType", "none",
        *extra_args,
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _healthy(url):
            if process.poll() is not None:
                pytest.fail(f"streamlit exited with {process.returncode}:\n{log_path.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after {STARTUP_TIMEOUT_S} s:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.25)
        yield Server(url, data_dir, log_path, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# How long an action or an assertion waits for the page. Playwright's assertions wait
# 5 s unless told. CI runs two suites side by side on two cores, and there a page's
# rerun (the Inspect link's controls, drawn after its result; a 100,000-row answer's
# label rows) has taken over 5 s. A page that never shows what is expected still
# fails, only later.
PATIENCE_MS = 30_000


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=PATIENCE_MS)

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser, server):
    with checked_page(browser, server) as tab:
        yield tab


@contextlib.contextmanager
def checked_page(browser, server: Server) -> Iterator:
    """A fresh browser context (a new Streamlit session) on `server` that fails the
    test if the app showed an exception box, or if the server logged a traceback
    meanwhile."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.set_default_timeout(PATIENCE_MS)
    tab = context.new_page()
    tab.base_url = server.url  # read back by st_browser.open_app (and tests opening a second tab)
    log_start = server.log_path.stat().st_size
    try:
        yield tab
        exceptions = tab.locator("[data-testid=stException]")
        assert exceptions.count() == 0, exceptions.first.inner_text()
        with open(server.log_path, "rb") as log:
            log.seek(log_start)
            logged = log.read().decode("utf-8", "replace")
        assert "Traceback" not in logged, logged[-4000:]
    finally:
        context.close()


@pytest.fixture(scope="session")
def screenshots() -> Iterator[Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    started = time.time()
    yield SCREENSHOTS
    if os.environ.get(UPDATE_SCREENSHOTS_ENV) == "1":
        copy_new_screenshots(SCREENSHOTS, DOCS_SCREENSHOTS, started)
