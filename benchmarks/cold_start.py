"""Cold start: from `streamlit run dashboard/app.py` to the page's first paint and
to the first result, against the floor no app can beat.

What is timed, all from the moment the server process is started (Popen):
- server up: /_stcore/health answers 200;
- first paint: the page's title "Inspect a retrieval" is visible in Chromium;
- first result: the "Returned" metric of the result is visible. The URL carries
  ?query=...&user=sam&k=5, so the query runs with no clicking.
Chromium (Debian's, driven by Playwright) is launched before the clock starts: a
reviewer's browser is already open. The page is requested as soon as the health
endpoint answers.

Baseline, measured in the same run and interleaved with the app runs: a bare
`python -c` that imports sentence_transformers and loads the packaged MiniLM model
(wall time from process start to exit). Two data-dir cases: a fresh
MEMLENS_DATA_DIR (the first open encodes the demo memories into demo.sqlite) and a
warm one (demo.sqlite already there, a new server process).

Targets: first paint within 2 s of process start, before the model has loaded;
first result within 1.2x of the floor.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from benchmarks._common import PYTHON, ROOT, median, report, table

PIZZA = "What is the user's favourite pizza topping?"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_S = 300

FLOOR_CODE = """
import time
started = time.perf_counter()
from sentence_transformers import SentenceTransformer
imported = time.perf_counter()
from connectors.embedding import packaged_model_path
SentenceTransformer(packaged_model_path(), device="cpu")
print(f"import={imported - started:.3f} load={time.perf_counter() - imported:.3f}")
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def measure_floor() -> dict[str, float]:
    """Seconds from starting a bare Python process to the model being loaded."""
    started = time.perf_counter()
    out = subprocess.run(
        [PYTHON, "-c", FLOOR_CODE], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=True
    ).stdout
    total = time.perf_counter() - started
    parts = dict(item.split("=") for item in out.split())
    return {"total": total, "import": float(parts["import"]), "load": float(parts["load"])}


def streamlit_command(port: int) -> list[str]:
    launcher = Path(PYTHON).with_name("streamlit")
    head = [str(launcher)] if launcher.exists() else [PYTHON, "-m", "streamlit"]
    return head + [
        "run",
        "dashboard/app.py",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]


def wait_for_health(port: int, started: float, proc: subprocess.Popen) -> float:
    import httpx

    url = f"http://127.0.0.1:{port}/_stcore/health"
    while time.perf_counter() - started < TIMEOUT_S:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode} before answering")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return time.perf_counter() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    raise TimeoutError("streamlit did not answer /_stcore/health")


def measure_app(browser, data_dir: Path) -> dict[str, float]:
    """One server start: seconds from Popen to health, first paint, first result."""
    port = free_port()
    env = dict(os.environ, MEMLENS_DATA_DIR=str(data_dir))
    log = (data_dir / "streamlit.log").open("w")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    started = time.perf_counter()
    proc = subprocess.Popen(
        streamlit_command(port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        health = wait_for_health(port, started, proc)
        url = f"http://127.0.0.1:{port}/?" + urlencode({"query": PIZZA, "user": "sam", "k": 5})
        page.goto(url, wait_until="commit", timeout=TIMEOUT_S * 1000)
        page.get_by_role("heading", name="Inspect a retrieval").wait_for(state="visible", timeout=TIMEOUT_S * 1000)
        paint = time.perf_counter() - started
        # The result's "Returned" metric (exactly: a panel may add "Returned after re-ranking").
        returned_label = page.locator('[data-testid="stMetricLabel"]').filter(has_text=re.compile(r"^\s*Returned\s*$"))
        result_at_paint = returned_label.count() > 0
        returned_label.first.wait_for(state="visible", timeout=TIMEOUT_S * 1000)
        result = time.perf_counter() - started
        returned = (
            page.locator('[data-testid="stMetric"]')
            .filter(has=returned_label)
            .first.locator('[data-testid="stMetricValue"]')
            .inner_text()
        )
    finally:
        context.close()
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    return {
        "health": health,
        "paint": paint,
        "result": result,
        "result_at_paint": float(result_at_paint),
        "returned": float(returned),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds of (floor, fresh app, warm app)")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    floors, fresh, warm = [], [], []
    work = Path(tempfile.mkdtemp(prefix="memlens-bench-cold-"))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            for round_number in range(1, args.repeat + 1):
                floors.append(measure_floor())
                print(f"round {round_number}: floor {floors[-1]}", flush=True)
                data_dir = work / f"data-{round_number}"
                data_dir.mkdir()
                fresh.append(measure_app(browser, data_dir))
                print(f"round {round_number}: fresh data dir {fresh[-1]}", flush=True)
                warm.append(measure_app(browser, data_dir))
                print(f"round {round_number}: warm data dir {warm[-1]}", flush=True)
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    floor = median(f["total"] for f in floors)
    rows = [
        [
            "floor: bare python, import sentence_transformers + load model",
            "",
            "",
            f"{floor:.2f}",
            "1.00x",
            f"import {median(f['import'] for f in floors):.2f} s, load {median(f['load'] for f in floors):.2f} s",
        ]
    ]
    verdicts = []
    for name, runs in (("app, fresh data dir (encodes demo memories)", fresh), ("app, warm data dir", warm)):
        paint = median(r["paint"] for r in runs)
        result = median(r["result"] for r in runs)
        early = all(not r["result_at_paint"] for r in runs)
        rows.append(
            [
                name,
                f"{median(r['health'] for r in runs):.2f}",
                f"{paint:.2f}",
                f"{result:.2f}",
                f"{result / floor:.2f}x",
                "paint came before the result in every run" if early else "a result was already on screen at paint",
            ]
        )
        verdicts.append(
            f"- {name}: first paint {paint:.2f} s (target <= 2 s: {'met' if paint <= 2 else 'NOT met'}; "
            f"{'before' if paint < floor and early else 'not before'} the model could have loaded, the floor being {floor:.2f} s); "
            f"first result {result:.2f} s = {result / floor:.2f}x the floor "
            f"(target <= 1.2x = {1.2 * floor:.2f} s: {'met' if result <= 1.2 * floor else 'NOT met'})."
        )
    body = (
        f"Median of {args.repeat} rounds; each round runs the floor, then the app on a fresh data dir, then the app "
        "again on that (now warm) data dir. Seconds from process start.\n\n"
        + table(["run", "server up (s)", "first paint (s)", "first result (s)", "vs floor", "note"], rows)
        + "\n\nPer run (s): "
        + "; ".join(
            f"round {i + 1}: floor {f['total']:.2f}, fresh paint {a['paint']:.2f} result {a['result']:.2f}, "
            f"warm paint {b['paint']:.2f} result {b['result']:.2f}"
            for i, (f, a, b) in enumerate(zip(floors, fresh, warm, strict=True))
        )
        + "\n\nTargets:\n"
        + "\n".join(verdicts)
    )
    report("cold_start: process start to first paint and first result", body)


if __name__ == "__main__":
    main()
