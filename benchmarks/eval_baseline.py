"""The plain way to run an evaluation, as a process of its own: the baseline
benchmarks/eval.py times `memlens eval` against (start to exit, imports and model
load included, as the CLI is timed).

It reads the judged questions (JSONL) and the store file's embeddings with sqlite3,
encodes every question in one call with sentence-transformers (batch_size=64, the
questions sorted by length inside that call, as sentence-transformers does), and
takes a numpy top-k by cosine per user. Nothing is built, nothing saved. With
--onnx DIR it encodes with memlens's ONNX export of the same model instead (one
call, sorted by token count): the encoder memlens uses, with nothing around it.

    python benchmarks/eval_baseline.py judged.jsonl store.sqlite --k 10 --model DIR [--onnx DIR]

Prints one JSON line: how many questions were ranked and their hit rate at k
(the share whose top k holds a relevant memory), so a run that did no work shows.
"""

from __future__ import annotations

import argparse
import json
import sqlite3

import numpy as np


def user_matrices(store: str) -> dict[str, tuple[list[str], np.ndarray]]:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    rows: dict[str, tuple[list[str], list[bytes]]] = {}
    for memory_id, user, blob in db.execute("SELECT id, user_id, embedding FROM memories ORDER BY user_id, id"):
        ids, blobs = rows.setdefault(user, ([], []))
        ids.append(memory_id)
        blobs.append(blob)
    db.close()
    return {
        user: (ids, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)) for user, (ids, blobs) in rows.items()
    }


def encode(questions: list[str], model_dir: str, onnx_dir: str | None) -> np.ndarray:
    if onnx_dir:
        from connectors.embedding.onnx_encoder import OnnxEncoder

        return OnnxEncoder(onnx_dir).encode(questions, batch_size=64)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    return model.encode(questions, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("judged")
    parser.add_argument("store")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--model", required=True, help="the sentence-transformers model directory")
    parser.add_argument("--onnx", default=None, metavar="DIR", help="memlens's ONNX export of the model")
    args = parser.parse_args()
    with open(args.judged, encoding="utf-8") as lines:
        judged = [json.loads(line) for line in lines if line.strip()]
    by_user = user_matrices(args.store)
    vectors = encode([q["query"] for q in judged], args.model, args.onnx)
    hits = 0
    for question, vector in zip(judged, vectors, strict=True):
        ids, matrix = by_user[question["user_id"]]
        scores = matrix @ vector
        top = np.argpartition(-scores, args.k)[: args.k]
        ranked = [ids[i] for i in top[np.argsort(-scores[top])]]
        relevant = set(question.get("relevant") or ()) | set(question.get("grades") or ())
        hits += bool(relevant & set(ranked))
    print(json.dumps({"questions": len(judged), "hit_rate": hits / len(judged)}))


if __name__ == "__main__":
    main()
