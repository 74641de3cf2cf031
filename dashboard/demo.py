"""Demo labels, so the Calibrate page has something to show on first open.

`python -m dashboard.demo` runs every demo query of demo_data/queries.jsonl
against a fresh demo store at k=5 and labels each hit ``relevant`` when its id is
among the query's ``relevant`` ids, ``not_relevant`` otherwise. The rows are
written to demo_data/demo_labels.jsonl in the label export format, by reviewer
"demo-judgments". Run it again after the demo memories or queries change (a test
checks that the bundled file still matches what the store returns).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from connectors.base import MemoryStore
from connectors.common.lines import LineIssue, json_objects
from connectors.registry import REGISTRY, fingerprint
from dashboard.calibration.label_files import LabelFile, read_label_file
from dashboard.database.model import Label
from dashboard.labels.export import to_jsonl

DEMO_DATA = Path(__file__).resolve().parents[1] / "demo_data"
DEMO_QUERIES = DEMO_DATA / "queries.jsonl"
DEMO_LABELS = DEMO_DATA / "demo_labels.jsonl"
DEMO_REVIEWER = "demo-judgments"
DEMO_K = 5
SCORE_DECIMALS = 6  # enough to place a hit against any floor; keeps the file stable


@dataclass
class DemoQuery:
    message_id: str
    user_id: str
    query: str
    relevant: list[str]


def demo_store_fingerprint() -> str:
    """The `store` value the Inspect page gives labels of the demo store with its
    default settings, so demo labels and live ones share one filter value."""
    spec = REGISTRY["embedded"]
    return fingerprint(spec.name, {f.name: f.default for f in spec.fields})


def read_queries(path: Path = DEMO_QUERIES) -> tuple[list[DemoQuery], list[LineIssue]]:
    """The demo queries, and an issue per line that could not be used."""
    queries: list[DemoQuery] = []
    problems: list[LineIssue] = []
    for number, obj in json_objects(path.read_text(encoding="utf-8"), path.name, problems):
        missing = [f for f in ("message_id", "user_id", "query") if not isinstance(obj.get(f), str) or not obj[f]]
        relevant = obj.get("relevant", [])
        if missing:
            problems.append(LineIssue(path.name, number, missing[0], "required, a non-empty string"))
        elif not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
            problems.append(LineIssue(path.name, number, "relevant", "must be a list of memory ids"))
        else:
            queries.append(DemoQuery(obj["message_id"], obj["user_id"], obj["query"], relevant))
    return queries, problems


def judge(store: MemoryStore, queries: list[DemoQuery], *, k: int = DEMO_K, at: str | None = None) -> list[Label]:
    """One label per returned hit: relevant iff the query's judgments list its id."""
    stamp = at or datetime.now(UTC).isoformat(timespec="seconds")
    store_name = demo_store_fingerprint()
    labels = []
    for query in queries:
        result = store.query(query.query, user_id=query.user_id, k=k)
        for hit in result.hits:
            labels.append(
                Label(
                    message_id=query.message_id,
                    memory_id=hit.memory_id,
                    rank=hit.rank,
                    score=round(hit.score, SCORE_DECIMALS) if hit.score is not None else None,
                    label="relevant" if hit.memory_id in query.relevant else "not_relevant",
                    reviewer=DEMO_REVIEWER,
                    store=store_name,
                    created_at=stamp,
                    updated_at=stamp,
                )
            )
    return labels


def load_demo_labels(path: Path = DEMO_LABELS) -> LabelFile:
    """The bundled demo labels, read like any uploaded label file."""
    labels = read_label_file(path)
    labels.source = "demo labels"
    return labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboard.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, default=DEMO_QUERIES)
    parser.add_argument("--out", type=Path, default=DEMO_LABELS)
    parser.add_argument("--k", type=int, default=DEMO_K)
    args = parser.parse_args(argv)

    from connectors.registry import open_demo_store

    queries, problems = read_queries(args.queries)
    for problem in problems:
        print(problem, file=sys.stderr)
    # A fresh store, so memory ages (and so recency) are those the demo file states.
    with tempfile.TemporaryDirectory(prefix="memlens-demo-labels-") as directory:
        store = open_demo_store(directory)
        try:
            labels = judge(store, queries, k=args.k)
        finally:
            store.close()
    args.out.write_text(to_jsonl(labels), encoding="utf-8")
    relevant = sum(label.label == "relevant" for label in labels)
    print(
        f"{args.out}: {len(labels)} labels from {len(queries)} queries "
        f"({relevant} relevant, {len(labels) - relevant} not relevant)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
