"""An evaluation run of 2,000 questions on the embedded store, against the plain way.

The data: benchmarks/_eval_data.py's generated set (2,000 questions over 6,000
memories in 10 users, seeded), imported once into an embedded store file.

What is timed, on the same questions in the same run (rounds interleaved, so a
burst of load on the shared machine hits both alike; the median round is reported):

- eval: ``dashboard.evaluation.runs.start_run`` at k=10 into a fresh label
  database: batch encoding through the store's ``query_many``, the per-user scan
  with every breakdown component, the hits built, every batch saved to SQLite;
- baseline: ``SentenceTransformer.encode(questions, batch_size=64)`` plus a numpy
  top-k per user over the same memory embeddings (nothing built, nothing saved);
- optionally (--one-by-one N) the store's ``query()`` for the first N questions,
  one at a time, scaled to 2,000: how an evaluation loop over the public API does it.

With --cli and --page (issue 20: "the same run takes 37 s on the page and 15.8 s
from the CLI"), the same run two more ways, each into a fresh label database:

- cli: ``memlens eval judged.jsonl --db store.sqlite --k 10 --format json`` as a
  process, timed from process start to exit (Python start, imports, the model
  opened, the run, the figures printed);
- page: the Quality page in a real ``streamlit run`` server driven by headless
  Chromium, timed from the click on *Start run* to the "Run ... complete" message on
  screen (the server, the model and the store already open: the page was opened
  first, as a reviewer does).

Target: eval takes at most 1.5x the baseline's time.
Run: ``python -m benchmarks.eval [--rounds R] [--one-by-one N] [--cli] [--page]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from benchmarks import _eval_data
from benchmarks._common import PYTHON, ROOT, median, report, table
from connectors.embedded.store import EmbeddedStore
from connectors.embedding import runtime as embedding
from dashboard.database import open_label_store
from dashboard.evaluation.judged_sets import JudgedSet, read_file
from dashboard.evaluation.runs import RunRequest, start_run
from dashboard.evaluation.storage import EvalStore

K = 10
TARGET = 1.5
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_S = 1800
SET_NAME = "bench"
IDLE = "[data-testid=stApp][data-test-connection-state=CONNECTED][data-test-script-state=notRunning]"


def cli_run(directory: Path, judged_file: Path, db: Path, round_number: int) -> float:
    """`memlens eval` as a process into a fresh data directory: seconds from start to exit."""
    env = {**os.environ, "MEMLENS_DATA_DIR": str(directory / f"cli-data-{round_number}"), "PYTHONPATH": str(ROOT)}
    env.pop("MEMLENS_LABELS_URL", None)
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "dashboard.cli.main", "eval", str(judged_file), "--db", str(db), "--k", str(K), "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0 or not json.loads(done.stdout)["complete"]:
        raise RuntimeError(f"memlens eval failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PageServer:
    """`streamlit run dashboard/app.py` (as `memlens run` starts it) with the store
    file as the sidebar's default, and a Chromium to drive it."""

    def __init__(self, directory: Path, db: Path, judged):
        self.data = directory / "page-data"
        self.data.mkdir()
        # The judged set kept in the server's label database, as an upload would keep it.
        labels = open_label_store(self.data / "labels.sqlite")
        EvalStore(labels).save_set(JudgedSet(SET_NAME, judged.questions))
        labels.close()
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "MEMLENS_DATA_DIR": str(self.data), "MEMLENS_EMBEDDED_DB": str(db), "PYTHONPATH": str(ROOT)}
        env.pop("MEMLENS_LABELS_URL", None)
        self.log = open(directory / "streamlit.log", "wb")  # closed in close()
        self.process = subprocess.Popen(
            [PYTHON, "-m", "streamlit", "run", "dashboard/app.py", "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("streamlit did not start: see streamlit.log")
            time.sleep(0.25)
        from playwright.sync_api import sync_playwright

        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)

    def run(self) -> tuple[float, float]:
        """A new browser session opens Quality, picks the set, clicks Start run:
        seconds from the click to the completion message, and to the end of that
        script run (the figures, the comparison and the rest of the page drawn)."""
        context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(TIMEOUT_S * 1000)
        page = context.new_page()
        try:
            page.goto(self.url + "/quality")
            page.wait_for_selector(IDLE)
            page.locator(".st-key-eval_set").get_by_role("combobox").click()
            page.get_by_role("option", name=SET_NAME, exact=True).click()
            page.wait_for_timeout(500)
            page.wait_for_selector(IDLE)
            button = page.locator(".st-key-eval_start").get_by_role("button")
            started = time.perf_counter()
            button.click()
            page.get_by_text("complete: 2000 questions", exact=False).first.wait_for()
            complete = time.perf_counter() - started
            page.wait_for_selector(IDLE)
            return complete, time.perf_counter() - started
        finally:
            context.close()

    def close(self) -> None:
        self.browser.close()
        self.playwright.stop()
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()


def baseline(model, questions, users, by_user) -> list[list[int]]:
    vectors = model.encode(questions, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    tops = []
    for vector, user in zip(vectors, users, strict=True):
        matrix = by_user[user]
        scores = matrix @ vector
        top = np.argpartition(-scores, K)[:K]
        tops.append(top[np.argsort(-scores[top])].tolist())
    return tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-by-one", type=int, default=0, metavar="N", help="also time query() on N questions")
    parser.add_argument("--cli", action="store_true", help="also time `memlens eval` as a process, start to exit")
    parser.add_argument("--page", action="store_true", help="also time the Quality page's run in streamlit + Chromium")
    args = parser.parse_args()
    cli_s: list[float] = []
    page_s: list[float] = []
    page_idle_s: list[float] = []
    server: PageServer | None = None

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        memories, judged_file = _eval_data.write(directory)
        judged = read_file(judged_file)
        store = EmbeddedStore(directory / "store.sqlite")
        started = time.perf_counter()
        store.import_jsonl(memories)
        import_s = time.perf_counter() - started
        model = embedding.load_model()
        questions = [q.query for q in judged.questions]
        users = [q.user_id for q in judged.questions]
        store._ensure_loaded()  # the baseline gets the same embeddings, per user
        by_user = {user: store._vectors[rows] for user, rows in store._by_user.items()}
        baseline(model, questions[:64], users[:64], by_user)  # warm both paths
        store.query_many(questions[:64], users[:64], K)

        if args.page:
            server = PageServer(directory, directory / "store.sqlite", judged)
        eval_ms, base_ms = [], []
        for round_number in range(args.rounds):
            labels = open_label_store(directory / f"labels-{round_number}.sqlite")
            request = RunRequest(judged, "embedded", "embedded:bench", {}, K)
            started = time.perf_counter()
            info = start_run(store, EvalStore(labels), request)
            eval_ms.append((time.perf_counter() - started) * 1000)
            assert info.complete
            labels.close()
            started = time.perf_counter()
            baseline(model, questions, users, by_user)
            base_ms.append((time.perf_counter() - started) * 1000)
            if args.cli:
                cli_s.append(cli_run(directory, judged_file, directory / "store.sqlite", round_number))
            if server is not None:
                complete, idle = server.run()
                page_s.append(complete)
                page_idle_s.append(idle)
            print(f"round {round_number + 1}: eval {eval_ms[-1] / 1000:.1f} s, baseline {base_ms[-1] / 1000:.1f} s"
                  + (f", cli {cli_s[-1]:.1f} s" if cli_s else "") + (f", page {page_s[-1]:.1f} s (drawn {page_idle_s[-1]:.1f} s)" if page_s else "")
                  + f", load {os.getloadavg()[0]:.1f}", flush=True)
        if server is not None:
            server.close()

        rows = [
            ["baseline: encode(batch_size=64) + numpy top-k", median(base_ms), median(base_ms) / len(questions), 1.0],
            ["memlens eval (start_run, saved)", median(eval_ms), median(eval_ms) / len(questions), median(eval_ms) / median(base_ms)],
        ]
        if cli_s:
            cli_ms = median(cli_s) * 1000
            rows.append(["memlens eval as a process (start to exit)", cli_ms, cli_ms / len(questions), cli_ms / median(base_ms)])
        if page_s:
            page_ms = median(page_s) * 1000
            rows.append(["Quality page in streamlit + Chromium (click to 'complete')", page_ms, page_ms / len(questions),
                         page_ms / median(base_ms)])
            idle_ms = median(page_idle_s) * 1000
            rows.append(["Quality page, click to the page drawn (figures, comparison)", idle_ms, idle_ms / len(questions),
                         idle_ms / median(base_ms)])
        if args.one_by_one:
            started = time.perf_counter()
            for question, user in zip(questions[: args.one_by_one], users[: args.one_by_one], strict=True):
                store.query(question, user_id=user, k=K)
            per_query = (time.perf_counter() - started) * 1000 / args.one_by_one
            rows.append([f"query() one at a time ({args.one_by_one} timed, x{len(questions)})", per_query * len(questions), per_query, per_query * len(questions) / median(base_ms)])
        store.close()

    ratio = median(eval_ms) / median(base_ms)
    body = (
        f"{len(questions):,} questions, 6,000 memories in 10 users, k={K}; import (encode 6,000 memories) took "
        f"{import_s:.1f} s; median of {args.rounds} interleaved rounds.\n\n"
        + table(["contender", "total ms", "ms / question", "x baseline"], rows)
        + f"\n\nTarget: eval at most {TARGET}x the baseline: {'met' if ratio <= TARGET else 'NOT met'} ({ratio:.2f}x)."
    )
    report("Evaluation run, 2,000 questions (benchmarks/eval.py)", body)


if __name__ == "__main__":
    main()
