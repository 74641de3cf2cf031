"""A retrieval log whose relevant memories are swapped for irrelevant ones (same ranks,
same scores) from a known day, on the demo store's memories, and a loopback judge that
grades by the demo judgments: the judged monitor's tests on the CLI and on the page."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from chat_model_server import Reply

QUERIES = Path(__file__).resolve().parents[1] / "demo_data" / "queries.jsonl"
DAYS, TURNS_PER_DAY, SWAP_DAY = 14, 30, 10
START = datetime(2026, 1, 1, tzinfo=UTC)


def answerable() -> list[dict]:
    queries = [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in queries if q["relevant"]]


def user_memories(store) -> dict[str, list[str]]:
    memories: dict[str, list[str]] = {}
    for m in store.list(user_id=None, limit=1000):
        memories.setdefault(m.user_id, []).append(m.memory_id)
    return memories


def log_text(memories: dict[str, list[str]], swap_from: int | None, start: datetime = START) -> str:
    """Per turn: rank 1 the question's relevant memory (score 0.62), rank 2 another of
    the user's memories (0.41), rank 3 under the floor (0.20). From day `swap_from`,
    rank 1 is an irrelevant memory with the same rank and score."""
    questions = answerable()
    rows = []
    for day in range(DAYS):
        for n in range(TURNS_PER_DAY):
            q = questions[(day * TURNS_PER_DAY + n) % len(questions)]
            others = [m for m in memories[q["user_id"]] if m not in q["relevant"]]
            first = q["relevant"][0]
            if swap_from is not None and day >= swap_from:
                first = others[(n + 5) % len(others)]
            ids = [first, others[n % len(others)], others[(n + 1) % len(others)]]
            stamp = (start + timedelta(days=day, minutes=n)).isoformat()
            for rank, (memory_id, score) in enumerate(zip(ids, (0.62, 0.41, 0.20), strict=True), start=1):
                rows.append({"message_id": f"d{day:02d}-t{n:02d}", "memory_id": memory_id, "rank": rank, "score": score,
                             "user_id": q["user_id"], "query": q["query"], "timestamp": stamp})
    return "".join(json.dumps(r) + "\n" for r in rows)


def demo_judge(texts: dict[str, str]):
    """A responder grading 3 when the passage is one of the question's relevant memories, else 0."""
    relevant: dict[str, set[str]] = {}  # several users ask the same question: each user's answer counts
    for q in answerable():
        relevant.setdefault(q["query"], set()).update(texts[m] for m in q["relevant"])

    def grade(body) -> Reply:
        prompt = body["messages"][0]["content"]
        query = prompt.split("\nQuery: ", 1)[1].split("\n", 1)[0]
        passage = prompt.split("\nPassage: ", 1)[1].split("\n", 1)[0]
        verdict = 3 if passage in relevant.get(query, set()) else 0
        # a reason of its own per pair: one reason for every pair fails the judge's checks
        reason = f"the demo judgments {'list' if verdict else 'do not list'} this memory for {query!r}"
        return Reply(content=json.dumps({"grade": verdict, "reason": reason}))

    return grade


def constant_judge(body) -> Reply:
    """A broken judge: grade 0 and the prompt's placeholder as the reason, for every pair."""
    return Reply(content=json.dumps({"grade": 0, "reason": "<one short sentence>"}))
