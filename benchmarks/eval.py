"""An evaluation run of 2,000 questions on the embedded store, against the plain way.

The data: benchmarks/_eval_data.py's generated set (2,000 questions over 6,000
memories in 10 users, seeded), imported once into an embedded store file.

What is timed, on the same questions in the same run (rounds interleaved, so a
burst of load on the shared machine hits both alike; the median round is reported):

- eval: ``dashboard.evaluation.runs.start_run`` at k=10 into a fresh label
  database: batch encoding through the store's ``query_many``, the per-user scan
  with every breakdown component, the hits built, every batch saved to SQLite;
- baseline: ``SentenceTransformer.encode(questions, batch_size=64)`` plus a numpy
  top-k per user over the same memory embeddings (nothing built, nothing saved);
- optionally (--one-by-one N) the store's ``query()`` for the first N questions,
  one at a time, scaled to 2,000: how an evaluation loop over the public API does it.

Target: eval takes at most 1.5x the baseline's time.
Run: ``python -m benchmarks.eval [--rounds R] [--one-by-one N]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import _eval_data
from benchmarks._common import median, report, table
from connectors.embedded.store import EmbeddedStore
from connectors.embedding import runtime as embedding
from dashboard.database import open_label_store
from dashboard.evaluation.judged_sets import read_file
from dashboard.evaluation.runs import RunRequest, start_run
from dashboard.evaluation.storage import EvalStore

K = 10
TARGET = 1.5


def baseline(model, questions, users, by_user) -> list[list[int]]:
    vectors = model.encode(questions, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    tops = []
    for vector, user in zip(vectors, users, strict=True):
        matrix = by_user[user]
        scores = matrix @ vector
        top = np.argpartition(-scores, K)[:K]
        tops.append(top[np.argsort(-scores[top])].tolist())
    return tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-by-one", type=int, default=0, metavar="N", help="also time query() on N questions")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        memories, judged_file = _eval_data.write(directory)
        judged = read_file(judged_file)
        store = EmbeddedStore(directory / "store.sqlite")
        started = time.perf_counter()
        store.import_jsonl(memories)
        import_s = time.perf_counter() - started
        model = embedding.load_model()
        questions = [q.query for q in judged.questions]
        users = [q.user_id for q in judged.questions]
        store._ensure_loaded()  # the baseline gets the same embeddings, per user
        by_user = {user: store._vectors[rows] for user, rows in store._by_user.items()}
        baseline(model, questions[:64], users[:64], by_user)  # warm both paths
        store.query_many(questions[:64], users[:64], K)

        eval_ms, base_ms = [], []
        for round_number in range(args.rounds):
            labels = open_label_store(directory / f"labels-{round_number}.sqlite")
            request = RunRequest(judged, "embedded", "embedded:bench", {}, K)
            started = time.perf_counter()
            info = start_run(store, EvalStore(labels), request)
            eval_ms.append((time.perf_counter() - started) * 1000)
            assert info.complete
            labels.close()
            started = time.perf_counter()
            baseline(model, questions, users, by_user)
            base_ms.append((time.perf_counter() - started) * 1000)

        rows = [
            ["baseline: encode(batch_size=64) + numpy top-k", median(base_ms), median(base_ms) / len(questions), 1.0],
            ["memlens eval (start_run, saved)", median(eval_ms), median(eval_ms) / len(questions), median(eval_ms) / median(base_ms)],
        ]
        if args.one_by_one:
            started = time.perf_counter()
            for question, user in zip(questions[: args.one_by_one], users[: args.one_by_one], strict=True):
                store.query(question, user_id=user, k=K)
            per_query = (time.perf_counter() - started) * 1000 / args.one_by_one
            rows.append([f"query() one at a time ({args.one_by_one} timed, x{len(questions)})", per_query * len(questions), per_query, per_query * len(questions) / median(base_ms)])
        store.close()

    ratio = median(eval_ms) / median(base_ms)
    body = (
        f"{len(questions):,} questions, 6,000 memories in 10 users, k={K}; import (encode 6,000 memories) took "
        f"{import_s:.1f} s; median of {args.rounds} interleaved rounds.\n\n"
        + table(["contender", "total ms", "ms / question", "x baseline"], rows)
        + f"\n\nTarget: eval at most {TARGET}x the baseline: {'met' if ratio <= TARGET else 'NOT met'} ({ratio:.2f}x)."
    )
    report("Evaluation run, 2,000 questions (benchmarks/eval.py)", body)


if __name__ == "__main__":
    main()
