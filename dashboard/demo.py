"""Demo labels, so the Calibrate page has something to show on first open.

`python -m dashboard.demo` runs every demo query of demo_data/queries.jsonl
against a fresh demo store at k=5 and labels each hit ``relevant`` when its id is
among the query's ``relevant`` ids, ``not_relevant`` otherwise. The rows are
written to demo_data/demo_labels.jsonl in the label export format, by reviewer
"demo-judgments" (a reviewer name the bundled file and reports carry; these are
demo labels, not judge labels). Run it again after the demo memories or queries
change (a test checks that the bundled file still matches what the store returns).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from connectors.base import MemoryStore
from connectors.registry import REGISTRY, fingerprint
from dashboard.calibration.label_files import LabelFile, read_label_file
from dashboard.database.model import Label
from dashboard.judged import DEMO_QUERIES, JudgedQuestion, read_questions
from dashboard.labels.export import to_jsonl

DEMO_DATA = Path(__file__).resolve().parents[1] / "demo_data"
DEMO_LABELS = DEMO_DATA / "demo_labels.jsonl"
DEMO_REVIEWER = "demo-judgments"
DEMO_K = 5
SCORE_DECIMALS = 6  # enough to place a hit against any floor; keeps the file stable


def demo_store_fingerprint() -> str:
    """The `store` value the Inspect page gives labels of the demo store with its
    default settings, so demo labels and live ones share one filter value."""
    spec = REGISTRY["embedded"]
    return fingerprint(spec.name, {f.name: f.default for f in spec.fields})


def label_demo_hits(
    store: MemoryStore, queries: list[JudgedQuestion], *, k: int = DEMO_K, at: str | None = None
) -> list[Label]:
    """One demo label per returned hit: relevant iff the query's relevant ids list its id."""
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

    queries, problems = read_questions(args.queries)
    for problem in problems:
        print(problem, file=sys.stderr)
    if not queries:
        # An unreadable or empty queries file must not overwrite the bundled labels.
        print(f"{args.queries}: no usable query; {args.out} left as it was", file=sys.stderr)
        return 1
    # A fresh store, so memory ages (and so recency) are those the demo file states.
    with tempfile.TemporaryDirectory(prefix="memlens-demo-labels-") as directory:
        store = open_demo_store(directory)
        try:
            labels = label_demo_hits(store, queries, k=args.k)
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
