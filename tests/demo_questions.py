"""The demo questions the tests ask, read from demo_data/queries.jsonl (the file the
demo judgments come from), so every test asks what the demo store was judged on, and
names the question the same way."""

from __future__ import annotations

import json
from pathlib import Path

DEMO_QUERIES = Path(__file__).resolve().parents[1] / "demo_data" / "queries.jsonl"


def demo_queries() -> list[dict]:
    return [json.loads(line) for line in DEMO_QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]


def query_text(message_id: str) -> str:
    return next(q["query"] for q in demo_queries() if q["message_id"] == message_id)


PIZZA = query_text("demo-q01")  # "What is the user's favourite pizza topping?"
THEME = query_text("demo-q04")  # "Which UI theme does the user prefer?"
