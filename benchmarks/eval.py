"""An evaluation run of 2,000 questions on the embedded store, against the plain way.

The data: benchmarks/_eval_data.py's generated set (2,000 questions over 6,000
memories in 10 users, seeded), imported once into an embedded store file.

Each contender is a process of its own, timed by this one from its start to its
exit (Python start, imports, model load, store read, the run, the output), in
rounds (interleaved, the order rotated each round, so a burst of load on the shared
machine hits all alike; the median round is reported):

- baseline: benchmarks/eval_baseline.py, a plain script that reads the judged
  file and the store file's embeddings, encodes the questions in one
  ``SentenceTransformer.encode(questions, batch_size=64)`` call and takes a numpy
  top-k per user (nothing built, nothing saved);
- baseline, ONNX: the same script encoding with memlens's ONNX export of the
  model (the encoder memlens uses, with nothing around it);
- cli: ``memlens eval judged.jsonl --db store.sqlite --k 10 --format json`` into
  a fresh data directory;
- with --page: the Quality page in a real ``streamlit run`` server driven by
  headless Chromium, timed from the click on *Start run* to the "Run ...
  complete" message on screen, and to the end of that script run (the server, the
  model and the store already open: the page was opened first, as a reviewer does);
- with --before DIR (a checkout of older code, e.g. ``git archive``): the CLI and
  the page again from that tree, in the same rounds.

Then where the time went: one more CLI process per tree with each phase's
functions wrapped to count their time (benchmarks/_eval_phases.py), and with
--page the page's run in AppTest the same way. --in-process adds the in-process
``start_run`` (and --one-by-one N the store's ``query()`` on N questions, scaled)
as extra rows.

Targets (issue 24): the CLI at most 1.2x the baseline; the page's run at most 1.2x
the CLI's.
Run: ``python -m benchmarks.eval [--rounds R] [--page] [--before DIR] [--in-process] [--one-by-one N]``
(``--onnx-baseline-only --no-phases``: more rounds of the CLI and the page in the same time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks import _eval_data
from benchmarks._common import PYTHON, ROOT, median, report, table
from connectors.embedded.store import EmbeddedStore
from connectors.embedding import model_loader as embedding
from connectors.embedding import onnx_export
from dashboard.database import AppDatabase
from dashboard.evaluation.judged_sets import JudgedSet, read_file
from dashboard.evaluation.runs import RunRequest, start_run

K = 10
TARGET = 1.2
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_S = 1800
SET_NAME = "bench"
IDLE = "[data-testid=stApp][data-test-connection-state=CONNECTED][data-test-script-state=notRunning]"
BASELINE = ROOT / "benchmarks" / "eval_baseline.py"
PHASES = ROOT / "benchmarks" / "_eval_phases.py"


def _env(code: Path, data: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "MEMLENS_DATA_DIR": str(data), "PYTHONPATH": str(code), **extra}
    env.pop("MEMLENS_LABELS_URL", None)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Seconds from the process's start to its exit, the CPU seconds it used (all its
    threads: far less moved by the other work on a shared machine than wall time), and its stdout."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command[1:3]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, _children_cpu() - cpu, done.stdout


def eval_command(judged_file: Path, db: Path) -> list[str]:
    return ["eval", str(judged_file), "--db", str(db), "--k", str(K), "--format", "json"]


def cli_run(code: Path, directory: Path, judged_file: Path, db: Path, label: str) -> tuple[float, float]:
    """`memlens eval` from the tree `code` as a process into a fresh data directory."""
    data = Path(tempfile.mkdtemp(prefix=f"cli-{label}-", dir=directory))
    seconds, cpu, out = _process([PYTHON, "-m", "dashboard.cli.main", *eval_command(judged_file, db)], _env(code, data), code)
    if not json.loads(out)["complete"]:
        raise RuntimeError(f"memlens eval ({label}) did not complete: {out}")
    return seconds, cpu


def baseline_run(directory: Path, judged_file: Path, db: Path, model_dir: str, onnx_dir: Path | None) -> tuple[float, float]:
    command = [PYTHON, str(BASELINE), str(judged_file), str(db), "--k", str(K), "--model", model_dir]
    if onnx_dir is not None:
        command += ["--onnx", str(onnx_dir)]
    seconds, cpu, out = _process(command, _env(ROOT, directory / "baseline-data"), directory)
    if json.loads(out)["questions"] != 2000:
        raise RuntimeError(f"the baseline did not rank every question: {out}")
    return seconds, cpu


def cli_phases(code: Path, directory: Path, judged_file: Path, db: Path, label: str) -> dict[str, float]:
    """One more `memlens eval` process, each phase's functions wrapped (benchmarks/_eval_phases.py)."""
    data = Path(tempfile.mkdtemp(prefix=f"phases-{label}-", dir=directory))
    out = data / "phases.json"
    t0 = time.time()
    env = _env(code, data, BENCH_T0=repr(t0))
    started = time.perf_counter()
    subprocess.run([PYTHON, str(PHASES), "cli", str(out), "--", *eval_command(judged_file, db)],
                   cwd=code, env=env, capture_output=True, check=True, timeout=TIMEOUT_S)  # fmt: skip
    total = time.perf_counter() - started
    phases = json.loads(out.read_text())
    phases["exit"] = t0 + total - phases.pop("end")
    phases["total"] = total
    return phases


def page_phases(code: Path, directory: Path, db: Path, judged, label: str) -> dict[str, float]:
    """The Quality page's run in AppTest, each phase's functions wrapped."""
    data = _page_data(directory / f"apptest-{label}", judged)
    out = data / "phases.json"
    env = _env(code, data, MEMLENS_EMBEDDED_DB=str(db), BENCH_CODE=str(code))
    subprocess.run([PYTHON, str(PHASES), "page", str(out), SET_NAME], cwd=code, env=env, capture_output=True,
                   check=True, timeout=TIMEOUT_S)  # fmt: skip
    return json.loads(out.read_text())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _page_data(data: Path, judged) -> Path:
    """A data directory whose label database keeps the judged set, as an upload would."""
    data.mkdir()
    db = AppDatabase(data / "labels.sqlite")
    db.judged_sets.save(JudgedSet(SET_NAME, judged.questions))
    db.close()
    return data


class PageServer:
    """`streamlit run dashboard/app.py` from the tree `code` (as `memlens run`
    starts it) with the store file as the sidebar's default, driven by `browser`."""

    def __init__(self, code: Path, directory: Path, db: Path, judged, label: str, browser):
        self.data = _page_data(directory / f"page-data-{label}", judged)
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = _env(code, self.data, MEMLENS_EMBEDDED_DB=str(db))
        self.log = open(directory / f"streamlit-{label}.log", "wb")  # closed in close()
        self.process = subprocess.Popen(
            [PYTHON, "-m", "streamlit", "run", "dashboard/app.py", "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=code, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
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
                self.close()
                raise RuntimeError(f"streamlit did not start: see streamlit-{label}.log")
            time.sleep(0.25)
        self.browser = browser

    def cpu(self) -> float:
        """The server process's CPU seconds so far (/proc/PID/stat utime + stime)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def run(self) -> tuple[float, float, float]:
        """A new browser session opens Quality, picks the set, clicks Start run:
        seconds from the click to the completion message, and to the end of that
        script run (the figures, the comparison and the rest of the page drawn),
        and the server's CPU seconds from the click to the message."""
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
            cpu = self.cpu()
            started = time.perf_counter()
            button.click()
            page.get_by_text("complete: 2000 questions", exact=False).first.wait_for()
            complete = time.perf_counter() - started
            cpu = self.cpu() - cpu
            page.wait_for_selector(IDLE)
            return complete, time.perf_counter() - started, cpu
        finally:
            context.close()

    def close(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()


def phase_table(columns: dict[str, dict[str, float]]) -> str:
    """Seconds per phase, one column per contender, the phases in the order they first appear."""
    order: list[str] = []
    for phases in columns.values():
        order += [p for p in phases if p not in order and p != "total"]
    rows = [[phase, *(f"{phases[phase]:.2f}" if phase in phases else "" for phases in columns.values())] for phase in order]
    rows.append(["total (one instrumented run)", *(f"{phases['total']:.2f}" for phases in columns.values())])
    return table(["phase (s)", *columns], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--page", action="store_true", help="also time the Quality page's run in streamlit + Chromium")
    parser.add_argument(
        "--before", type=Path, default=None, metavar="DIR", help="also time the CLI (and page) from this older tree"
    )
    parser.add_argument("--in-process", action="store_true", help="also time start_run in this process")
    parser.add_argument("--one-by-one", type=int, default=0, metavar="N", help="also time query() on N questions")
    parser.add_argument("--title", default="", help="added to the RESULTS.md heading")
    parser.add_argument("--onnx-baseline-only", action="store_true",
                        help="leave out the sentence-transformers baseline (more rounds of the rest in the time)")  # fmt: skip
    parser.add_argument("--no-phases", action="store_true", help="leave out the instrumented runs")
    args = parser.parse_args()
    trees = {"": ROOT} if args.before is None else {"": ROOT, " (before)": args.before.resolve()}
    times: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}  # CPU seconds, same rounds
    servers: dict[str, PageServer] = {}

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        directory = Path(tmp)
        memories, judged_file = _eval_data.write(directory)
        judged = read_file(judged_file)
        db = directory / "store.sqlite"
        store = EmbeddedStore(db)
        started = time.perf_counter()
        store.import_jsonl(memories)
        import_s = time.perf_counter() - started
        model_dir = embedding.resolve_model_path(None)
        embedding.encoder()  # exported once (cached per model), as memlens does on first use
        onnx_dir = onnx_export.export_dir(model_dir)

        contenders: dict[str, object] = {
            "baseline: plain script, sentence-transformers encode + numpy top-k": lambda: baseline_run(
                directory, judged_file, db, model_dir, None),
            "baseline, ONNX: the same script on memlens's ONNX encoder": lambda: baseline_run(
                directory, judged_file, db, model_dir, onnx_dir),
        }  # fmt: skip
        if args.onnx_baseline_only:  # the first contender is what "x baseline" divides by
            del contenders["baseline: plain script, sentence-transformers encode + numpy top-k"]
        for suffix, code in trees.items():
            contenders[f"memlens eval{suffix}"] = lambda code=code, suffix=suffix: cli_run(
                code, directory, judged_file, db, f"cli{suffix.strip(' ()')}"
            )
        if args.page:
            from playwright.sync_api import sync_playwright

            playwright = stack.enter_context(sync_playwright())
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            stack.callback(browser.close)
            for suffix, code in trees.items():
                servers[suffix] = PageServer(code, directory, db, judged, suffix.strip(" ()") or "after", browser)
                stack.callback(servers[suffix].close)
                contenders[f"Quality page{suffix}"] = servers[suffix]
        if args.in_process:

            def in_process() -> tuple[float, float]:
                db = AppDatabase(Path(tempfile.mkdtemp(dir=directory)) / "labels.sqlite")
                request = RunRequest(judged, "embedded", "embedded:bench", {}, K)
                begun, cpu = time.perf_counter(), time.process_time()
                assert start_run(store, db, request).complete
                db.close()
                return time.perf_counter() - begun, time.process_time() - cpu

            contenders["start_run in-process (model and store open)"] = in_process
        names = list(contenders)
        for round_number in range(args.rounds):
            shift = round_number % len(names)
            line = []
            for name in names[shift:] + names[:shift]:
                contender = contenders[name]
                if isinstance(contender, PageServer):
                    complete, drawn, cpu = contender.run()
                    times.setdefault(name, []).append(complete)
                    cpus.setdefault(name, []).append(cpu)
                    times.setdefault(name + ", drawn", []).append(drawn)
                    line.append(f"{name} {complete:.1f} s (drawn {drawn:.1f} s, CPU {cpu:.1f} s)")
                else:
                    wall, cpu = contender()  # type: ignore[operator]
                    times.setdefault(name, []).append(wall)
                    cpus.setdefault(name, []).append(cpu)
                    line.append(f"{name} {wall:.1f} s (CPU {cpu:.1f} s)")
            print(f"round {round_number + 1}: " + "; ".join(line) + f"; load {os.getloadavg()[0]:.1f}", flush=True)
        stack.close()  # the servers and the browser

        phases = {}
        for suffix, code in ({} if args.no_phases else trees).items():
            phases[f"memlens eval{suffix}"] = cli_phases(code, directory, judged_file, db, suffix.strip(" ()") or "after")
        if args.page and not args.no_phases:
            for suffix, code in trees.items():
                phases[f"Quality page{suffix}, AppTest"] = page_phases(
                    code, directory, db, judged, suffix.strip(" ()") or "after"
                )
        if args.one_by_one:
            store._ensure_loaded()
            begun = time.perf_counter()
            for q in judged.questions[: args.one_by_one]:
                store.query(q.query, user_id=q.user_id, k=K)
            times[f"query() one at a time ({args.one_by_one} timed, x2000)"] = [
                (time.perf_counter() - begun) * 2000 / args.one_by_one
            ]
        store.close()

    base, base_cpu = median(times[names[0]]), median(cpus[names[0]])
    rows = []
    for name, values in times.items():
        used = median(cpus[name]) if name in cpus else None
        rows.append([name, median(values), median(values) * 1000 / 2000, f"{median(values) / base:.2f}x",
                     "" if used is None else used, "" if used is None else f"{used / base_cpu:.2f}x",
                     " / ".join(f"{v:.1f}" for v in values)])  # fmt: skip
    body = (
        f"2,000 questions, 6,000 memories in 10 users, k={K}; import (encode 6,000 memories) took {import_s:.1f} s; "
        f"each contender a process of its own timed start to exit (the page: click to message), median of "
        f"{args.rounds} interleaved rounds, order rotated each round; load {os.getloadavg()[0]:.1f} at the end.\n\n"
        + table(["contender", "median s", "ms / question", "x baseline", "CPU s", "CPU x baseline", "rounds (s)"], rows)
    )
    verdicts = []
    for suffix in trees:
        cli_s, cli_cpu = median(times[f"memlens eval{suffix}"]), median(cpus[f"memlens eval{suffix}"])
        verdicts.append(
            f"memlens eval{suffix}: {cli_s / base:.2f}x the baseline "
            f"({'met' if cli_s / base <= TARGET else 'NOT met'}; target {TARGET}x); CPU {cli_cpu / base_cpu:.2f}x"
        )
        if args.page:
            page_s, page_cpu = median(times[f"Quality page{suffix}"]), median(cpus[f"Quality page{suffix}"])
            verdicts.append(
                f"Quality page{suffix}: {page_s / cli_s:.2f}x memlens eval{suffix} "
                f"({'met' if page_s / cli_s <= TARGET else 'NOT met'}; target {TARGET}x); CPU {page_cpu / cli_cpu:.2f}x"
            )
    body += "\n\n" + "\n".join(f"- {v}" for v in verdicts)
    if phases:
        body += "\n\nWhere the time went (one instrumented run each, seconds; benchmarks/_eval_phases.py):\n\n" + phase_table(
            phases
        )
    report("Evaluation run, 2,000 questions (benchmarks/eval.py)" + (f", {args.title}" if args.title else ""), body)


if __name__ == "__main__":
    main()
