"""Judging throughput against a model that takes 50 ms per answer.

Setup: the loopback OpenAI-compatible server the tests use (tests/chat_model_server.py)
on 127.0.0.1 in this process, answering every grading request with a valid grade
after LATENCY seconds. The LLM judge (dashboard/judging/judges.py) grades PAIRS
pairs through the chat-model client with bounded_map, at several concurrency limits.

Target (issue 23): at least 0.8x of the ideal throughput, concurrency / latency,
measured in the same run. The ideal is what the limit allows if memlens added no
time at all; the ratio is the share of it memlens reaches.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from functools import partial

from benchmarks._common import ROOT, report, table

LATENCY = 0.05
PAIRS = 200
CONCURRENCY = (1, 4, 8, 16)
TARGET = 0.8


def load_server_module():
    spec = importlib.util.spec_from_file_location("chat_model_server", ROOT / "tests" / "chat_model_server.py")
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    sys.modules["chat_model_server"] = module
    spec.loader.exec_module(module)
    return module


def grade_pair(judge, pair: tuple[str, str]):
    return judge.grade(*pair)


def main() -> int:
    from dashboard.judging.client import ChatClient, ModelConfig, bounded_map
    from dashboard.judging.judges import LlmJudge

    server_module = load_server_module()
    answer = server_module.Reply(content='{"grade": 2, "reason": "partly answers"}')
    rows = []
    problems = []
    with server_module.ChatModelServer(lambda body: answer, latency=LATENCY) as server:
        for limit in CONCURRENCY:
            client = ChatClient(ModelConfig(base_url=server.url, model="bench", concurrency=limit), send_text=True)
            judge = LlmJudge(client, "bench")
            judge.grade("warm", "up")  # the first connection
            pairs = [(f"question {i}", f"memory {i}") for i in range(PAIRS)]
            started = time.perf_counter()
            results = list(bounded_map(partial(grade_pair, judge), pairs, limit))
            seconds = time.perf_counter() - started
            client.close()
            failed = sum(1 for _, _, error in results if error is not None)
            if failed:
                problems.append(f"{failed} of {PAIRS} gradings failed at concurrency {limit}")
            ideal = limit / LATENCY
            measured = PAIRS / seconds
            rows.append([limit, PAIRS, f"{ideal:,.0f}", f"{measured:,.1f}", f"{measured / ideal:.2f}x", "yes" if measured / ideal >= TARGET else "NO"])
    report(
        "judging: LLM judge throughput against a 50 ms loopback model",
        f"Loopback OpenAI-compatible server answering each grading after {LATENCY * 1000:.0f} ms; "
        f"{PAIRS} pairs per row through LlmJudge.grade and bounded_map. Ideal = concurrency / latency "
        f"(the baseline, same run); target at least {TARGET}x of it.\n\n"
        + table(["concurrency", "pairs", "ideal (pairs/s, baseline)", "measured (pairs/s)", "of ideal", f">= {TARGET}x"], rows),
    )
    for problem in problems:
        print(f"WRONG RESULT: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
