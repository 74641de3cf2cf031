"""The bundled sample retrieval log, demo_data/sample_log.jsonl.

`python -m dashboard.logs.demo` runs every demo query of demo_data/queries.jsonl
against a fresh demo store at k=5 and writes one log row per returned memory, the
way a team would log its agent's retrievals: message_id, memory_id, rank, score,
user_id, timestamp and store, plus the query text (the demo's messages are not
anyone's private data, so the sample shows the Label page with message text).
Timestamps are a fixed, minute-spaced sequence so the file only changes when the
demo memories or queries do. Run it again after they change (a test checks that
the bundled log still matches what the store returns).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from connectors.base import MemoryStore
from dashboard.demo import DEMO_DATA, DEMO_K, SCORE_DECIMALS, demo_store_fingerprint
from dashboard.judged import DEMO_QUERIES, JudgedQuestion, read_questions

SAMPLE_LOG = DEMO_DATA / "sample_log.jsonl"
FIRST_TIMESTAMP = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def log_rows(store: MemoryStore, queries: list[JudgedQuestion], *, k: int = DEMO_K) -> list[dict[str, Any]]:
    # the same `store` value as live labels of the demo store and the demo labels
    store_name = demo_store_fingerprint()
    rows = []
    for turn, query in enumerate(queries):
        stamp = (FIRST_TIMESTAMP + timedelta(minutes=turn)).isoformat().replace("+00:00", "Z")
        result = store.query(query.query, user_id=query.user_id, k=k)
        for hit in result.hits:
            rows.append(
                {
                    "message_id": query.message_id,
                    "memory_id": hit.memory_id,
                    "rank": hit.rank,
                    "score": round(hit.score, SCORE_DECIMALS) if hit.score is not None else None,
                    "user_id": query.user_id,
                    "query": query.query,
                    "timestamp": stamp,
                    "store": store_name,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboard.logs.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, default=DEMO_QUERIES)
    parser.add_argument("--out", type=Path, default=SAMPLE_LOG)
    parser.add_argument("--k", type=int, default=DEMO_K)
    args = parser.parse_args(argv)

    from connectors.registry import open_demo_store

    queries, problems = read_questions(args.queries)
    if problems:
        # The demo file is ours: the sample log is written from the whole file or not at all.
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{args.out} left as it was", file=sys.stderr)
        return 1
    # A fresh store, so memory ages (and so recency) are those the demo file states.
    with tempfile.TemporaryDirectory(prefix="memlens-demo-log-") as directory:
        store = open_demo_store(directory)
        try:
            rows = log_rows(store, queries, k=args.k)
        finally:
            store.close()
    args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    print(f"{args.out}: {len(rows)} rows from {len(queries)} queries at k={args.k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
