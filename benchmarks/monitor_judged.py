"""The judged monitor's throughput against a plain concurrent client sending the same
requests, and a second run on the same logs.

Setup: a JSONL log of 30 days x 60 turns on the demo store's memories (each turn 3
memories above the floor 0.35, with its query text); the loopback OpenAI-compatible
server the tests use (tests/chat_model_server.py), answering every request with a
valid grade after 20 ms.

- memlens: `memlens monitor LOG --floor 0.35 --judge J --send-text --sample 20 --db
  demo.sqlite --labels FRESH`, a fresh process, start to exit (reading the log, the
  windows, the sample, the query texts, the memory text from the store, grading,
  saving each grade): 30 x 20 x 3 = 1,800 pairs.
- Baseline, in the same run: a plain httpx client (a fresh process too) on as many
  threads as memlens's concurrency, posting the same 1,800 chat requests (the same
  prompts) and decoding each answer; nothing read, nothing saved.
- Then the same command again on the same logs and app database: the requests it sends.

Targets: memlens at least 0.8x the plain client's pairs per second; the second run
sends no request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks._common import PYTHON, ROOT, exit_code, report, table
from benchmarks.judging import load_server_module

DAYS, TURNS, SAMPLE, KEPT = 30, 60, 20, 3
LATENCY = 0.02
TARGET = 0.8


def write_log(path: Path, store) -> None:
    by_user: dict[str, list] = {}
    for memory in store.list(user_id=None, limit=1000):
        by_user.setdefault(memory.user_id, []).append(memory)
    users = sorted(by_user)
    rows = []
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for day in range(DAYS):
        for n in range(TURNS):
            stamp = (start + timedelta(days=day, seconds=n)).isoformat()
            memories = by_user[users[n % len(users)]]  # one user's turn: that user's memories
            for rank in range(1, KEPT + 1):
                memory = memories[(day * TURNS + n + rank) % len(memories)]
                rows.append({"message_id": f"d{day}-t{n}", "memory_id": memory.memory_id, "rank": rank, "score": 0.7 - 0.05 * rank,
                             "user_id": memory.user_id, "query": f"question {n} of day {day}", "timestamp": stamp})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


PLAIN_CLIENT = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
import httpx
url, prompts_path, concurrency, schema = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
prompts = json.loads(open(prompts_path, encoding="utf-8").read())
with httpx.Client(base_url=url) as client:
    def post(prompt):
        body = {"model": "bench", "messages": [{"role": "user", "content": prompt}], "max_tokens": 300,
                "response_format": {"type": "json_schema", "json_schema": {"name": "grade", "schema": schema}}}
        reply = client.post("/chat/completions", json=body, timeout=30)
        return int(json.loads(reply.json()["choices"][0]["message"]["content"])["grade"])
    with ThreadPoolExecutor(concurrency) as pool:
        grades = list(pool.map(post, prompts))
print(len(grades))
"""
MEMLENS = "import sys; from dashboard.cli.main import main; sys.exit(main(sys.argv[1:]))"


def timed_process(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([PYTHON, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - started, done.stdout


def main() -> int:
    from connectors.embedded.factories import open_demo_store
    from dashboard.judging.client import DEFAULT_CONCURRENCY
    from dashboard.judging.judges import GRADE_SCHEMA, UMBRELA_PROMPT

    server_module = load_server_module()
    answer = server_module.Reply(content='{"grade": 2, "reason": "partly answers"}')
    folder = Path(tempfile.mkdtemp(prefix="memlens-bench-judged-"))
    store = open_demo_store(folder)
    log = folder / "log.jsonl"
    write_log(log, store)
    texts = list(m.text for m in store.list(user_id=None, limit=1000))
    store.close()
    (folder / "judge.toml").write_text('name = "bench"\nkind = "llm"\n', encoding="utf-8")
    pairs = DAYS * SAMPLE * KEPT
    prompts = [UMBRELA_PROMPT.format(query=f"question {i % TURNS}", passage=texts[i % len(texts)]) for i in range(pairs)]
    (folder / "prompts.json").write_text(json.dumps(prompts), encoding="utf-8")
    command = ["-c", MEMLENS, "monitor", str(log), "--floor", "0.35", "--judge", str(folder / "judge.toml"), "--send-text",
               "--sample", str(SAMPLE), "--db", str(folder / "demo.sqlite"), "--labels", str(folder / "app.sqlite")]
    problems: list[str] = []
    with server_module.ChatModelServer(lambda body: answer, latency=LATENCY) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMLENS_LLM_BASE_URL": server.url, "MEMLENS_LLM_MODEL": "bench",
               "MEMLENS_DATA_DIR": str(folder)}
        plain_seconds, plain_out = timed_process(
            ["-c", PLAIN_CLIENT, server.url, str(folder / "prompts.json"), str(DEFAULT_CONCURRENCY), json.dumps(GRADE_SCHEMA)], env
        )
        if plain_out.strip() != str(pairs):
            problems.append(f"the plain client got {plain_out.strip()!r} answers, expected {pairs}")
        before = len(server.received)
        first_seconds, out = timed_process(command, env)
        first_requests = len(server.received) - before
        line = next((text for text in out.splitlines() if "pair(s) graded now" in text), "")
        before = len(server.received)
        second_seconds, _ = timed_process(command, env)
        second_requests = len(server.received) - before
    if first_requests != pairs:
        problems.append(f"the judged monitor sent {first_requests} requests, expected {pairs}")
    ratio = plain_seconds / first_seconds
    rows = [
        ["plain httpx client, same requests (baseline)", f"{pairs:,}", f"{plain_seconds:.2f}", f"{pairs / plain_seconds:,.0f}", "1.00x"],
        ["memlens monitor --judge, first run", f"{first_requests:,}", f"{first_seconds:.2f}", f"{pairs / first_seconds:,.0f}", f"{ratio:.2f}x"],
        ["memlens monitor --judge, second run (cached)", f"{second_requests:,}", f"{second_seconds:.2f}", "-", "-"],
    ]
    body = (
        f"{DAYS} days x {TURNS} turns, {SAMPLE} judged per day, top {KEPT} kept: {pairs:,} pairs; loopback judge answering after "
        f"{LATENCY * 1000:.0f} ms; concurrency {DEFAULT_CONCURRENCY} for both. Each is a fresh process, start to exit: memlens "
        f"reads the log, samples, reads the query and memory text, grades and saves each grade; the plain client only posts "
        f"the same prompts and decodes the answers. memlens's grading line: `{line}`\n\n"
        + table(["run (a process each)", "requests", "seconds", "pairs/s", "vs plain"], rows)
        + f"\n\nTargets: at least {TARGET}x the plain client's throughput: {ratio:.2f}x ({'met' if ratio >= TARGET else 'NOT met'}); "
        f"a second run sends no request: {second_requests} ({'met' if second_requests == 0 else 'NOT met'}).\n\n"
        f"The second run is the command's fixed cost (start-up, imports, the log read, the sample; nothing sent): "
        f"{second_seconds:.2f} s. The first run less it, {first_seconds - second_seconds:.2f} s, is the grading itself: "
        f"{pairs / max(first_seconds - second_seconds, 1e-9):,.0f} pairs/s, "
        f"{plain_seconds / max(first_seconds - second_seconds, 1e-9):.2f}x the plain client's whole process."
    )
    report("monitor_judged: memlens monitor --judge vs a plain concurrent client", body)
    if second_requests:
        problems.append(f"the second run sent {second_requests} requests")
    return exit_code(problems)


if __name__ == "__main__":
    sys.exit(main())
