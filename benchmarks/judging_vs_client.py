"""Judging throughput against a plain concurrent client, on a model that takes 20 ms.

Setup: the loopback OpenAI-compatible server the tests use (tests/chat_model_server.py)
on 127.0.0.1 in this process, answering every grading request with a valid grade
after LATENCY seconds. Two ways to send the same PAIRS requests at the same
concurrency, in the same run, interleaved:

- the baseline: a plain client, one ``httpx.Client`` and a thread pool of that size,
  posting the request body memlens sends (captured from the server) and decoding
  the answer's JSON, nothing else;
- memlens: the LLM judge (dashboard/judging/judges.py) through ``bounded_map``, as
  `memlens judge` grades: the prompt built, the answer checked against the grade's
  rules, the tokens counted.

Target (issue 39): memlens at least 0.8x the baseline's throughput at every
concurrency. Each row is the median of REPEATS runs of each.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from benchmarks._common import report, table
from benchmarks.judging import grade_pair, load_server_module

LATENCY = 0.02
PAIRS = 200
CONCURRENCY = (1, 4, 8, 16)
REPEATS = 3
TARGET = 0.8


def plain_client(url: str, body: dict, limit: int) -> tuple[float, int]:
    """(seconds, failures) for PAIRS posts of `body` at `limit` in flight."""
    import httpx

    bodies = []
    for i in range(PAIRS):
        mine = json.loads(json.dumps(body))
        mine["messages"][0]["content"] = body["messages"][0]["content"].replace("warm", f"question {i}", 1)
        bodies.append(mine)
    with httpx.Client(timeout=30, limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit)) as client:
        client.post(f"{url}/chat/completions", json=body).raise_for_status()  # the first connection

        def send(payload: dict) -> bool:
            answer = client.post(f"{url}/chat/completions", json=payload)
            json.loads(answer.json()["choices"][0]["message"]["content"])
            return answer.status_code == 200

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=limit) as pool:
            ok = list(pool.map(send, bodies))
        return time.perf_counter() - started, ok.count(False)


def through_memlens(url: str, limit: int) -> tuple[float, int]:
    from dashboard.judging.client import ChatClient, ModelConfig, bounded_map
    from dashboard.judging.judges import LlmJudge

    client = ChatClient(ModelConfig(base_url=url, model="bench", concurrency=limit), send_text=True)
    try:
        judge = LlmJudge(client, "bench")
        judge.grade("warm", "up")  # the first connection
        pairs = [(f"question {i}", f"memory {i}") for i in range(PAIRS)]
        started = time.perf_counter()
        results = list(bounded_map(partial(grade_pair, judge), pairs, limit))
        seconds = time.perf_counter() - started
        errors = [error for _, _, error in results if error is not None]
        if errors:
            print(f"memlens at concurrency {limit}: first failure {errors[0]!r}", file=sys.stderr)
        return seconds, len(errors)
    finally:
        client.close()


def main() -> int:
    server_module = load_server_module()
    answer = server_module.Reply(content='{"grade": 2, "reason": "partly answers"}')
    rows, problems = [], []
    with server_module.ChatModelServer(lambda body: answer, latency=LATENCY) as server:
        through_memlens(server.url, 1)  # warm both paths' imports before timing
        body = next(r.body for r in server.received if r.body)  # what memlens sends, as the server got it
        for limit in CONCURRENCY:
            plain, ours = [], []
            for _ in range(REPEATS):  # interleaved, so load on the machine falls on both
                seconds, failed = plain_client(server.url, body, limit)
                plain.append(PAIRS / seconds)
                problems += [f"baseline: {failed} failed at concurrency {limit}"] if failed else []
                seconds, failed = through_memlens(server.url, limit)
                ours.append(PAIRS / seconds)
                problems += [f"memlens: {failed} failed at concurrency {limit}"] if failed else []
            base, mine = statistics.median(plain), statistics.median(ours)
            rows.append([limit, PAIRS, f"{base:,.1f}", f"{mine:,.1f}", f"{mine / base:.2f}x", "yes" if mine / base >= TARGET else "NO"])
    report(
        "judging_vs_client: LLM judge throughput against a plain concurrent client, 20 ms loopback model",
        f"Loopback OpenAI-compatible server answering each grading after {LATENCY * 1000:.0f} ms; {PAIRS} requests "
        f"per run at each concurrency, median of {REPEATS} interleaved runs. Baseline: httpx.Client and a thread pool "
        "posting the same request body (same run); memlens: LlmJudge.grade through bounded_map, as `memlens judge`. "
        f"Target: at least {TARGET}x the baseline.\n\n"
        + table(["concurrency", "requests", "plain client (req/s, baseline)", "memlens judge (pairs/s)", "of baseline", f">= {TARGET}x"], rows),
    )
    for problem in problems:
        print(f"WRONG RESULT: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
