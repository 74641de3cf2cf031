"""The embedded store at 10,000 / 100,000 / 1,000,000 memories: query latency
against FAISS and against one read of the vectors; import throughput; memory.

Scan benchmark (one child process per size, so RSS figures are that size's own):
- The SQLite file is written straight (random unit float32 vectors, 384 dims,
  ids, users, dates, importance, usage), then opened with EmbeddedStore.
- Two cases on the same file: "one user" (user u0 holds every memory, the query
  names u0) and "1 of 10 users" (a second file whose rows are inserted round-robin
  across 10 users, the layout that scatters one user's rows through the table; the
  query names u3, so a tenth of the rows are scanned).
- Timed: EmbeddedStore.query(text, user_id, k=5) with the query encoding replaced
  by a precomputed unit vector, after the first query has loaded the arrays. That
  is the scan (cosine for every scanned memory plus the recency, importance and
  usage components and the weighted sum), the top-k selection, and building the 5
  Hits (their texts read from SQLite by id). Query encoding is excluded.
- Baselines on the same vectors in the same process: FAISS IndexFlatIP.search
  (inner products and top-k only) and "one float32 read": np.sum over the N x 384
  float32 matrix of the rows scanned (bandwidth bound).
- Recall@5 of the store's semantic ranking (weights semantic=1) against FAISS's
  exact top 5, over 20 queries: 1.0 unless the store trades accuracy for speed.
- Memory: RSS of the child before opening the store, after the arrays are loaded,
  and its peak while loading (VmHWM); the SQLite file size.

Import benchmark: a few thousand real texts (the demo memories, varied) imported
with EmbeddedStore.import_jsonl and its progress callback drawing a bar; encoding
and total throughput (texts/s), the model load excluded and shown apart.

Targets: the store never slower than FAISS; at 100,000, a query no slower than
one float32 read.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from benchmarks._common import PYTHON, ROOT, median, peak_rss_mib, report, rss_mib, table, timed

DIMENSIONS = 384
SIZES = (10_000, 100_000, 1_000_000)
K = 5
CHUNK = 50_000
NOW = datetime(2026, 6, 1, tzinfo=UTC)
MODEL_NAME = "all-MiniLM-L6-v2"


def repeats_for(rows: int) -> int:
    return max(10, min(300, 3_000_000 // max(rows, 1)))


# ---------------------------------------------------------------- data


def write_store(path: Path, size: int, users: int, seed: int) -> None:
    """`size` memories with random unit vectors written straight into SQLite, rows
    inserted round-robin over `users` users (u0, u1, ...)."""
    from connectors.embedded.files import SCHEMA

    rng = np.random.default_rng(seed)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(SCHEMA)
    for start in range(0, size, CHUNK):
        count = min(CHUNK, size - start)
        vectors = rng.standard_normal((count, DIMENSIONS), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ages = rng.uniform(0, 24 * 365, count)
        importance = rng.uniform(0.05, 1.0, count)
        usage = rng.integers(0, 50, count)
        db.executemany(
            "INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    f"m{start + i:07d}",
                    f"u{(start + i) % users}",
                    f"synthetic memory {start + i}",
                    (NOW - timedelta(hours=float(ages[i]))).isoformat(),
                    float(importance[i]),
                    int(usage[i]),
                    "{}",
                    vectors[i].tobytes(),
                    MODEL_NAME,
                )
                for i in range(count)
            ),
        )
    db.commit()
    db.close()


# ---------------------------------------------------------------- the scan before this version


def previous_scan(store, query_vector: np.ndarray, rows: slice, k: int) -> list[int]:
    """The scan as it was before recency was anchored per load (the "before" column):
    the recency exp and every component computed per memory on every query."""
    import math

    from connectors.embedded.scan import single_threaded_blas, top_k

    vectors = store._vectors[rows]
    with single_threaded_blas():
        semantic = vectors @ query_vector
    np.clip(semantic, 0.0, 1.0, out=semantic)
    seconds = np.subtract(store._now().timestamp(), store._created[rows])
    np.maximum(seconds, 0.0, out=seconds)
    recency = np.multiply(seconds, -math.log(2) / (store.half_life_hours * 3600.0))
    np.exp(recency, out=recency)
    score = np.multiply(recency, store.weights["recency"])
    score += store._anchored().fixed[rows]
    score += store.weights["semantic"] * semantic
    return top_k(score, store._ids[rows], k)


# ---------------------------------------------------------------- one size, in a child process


def scan_child(size: int, users: int, user: str, workdir: Path) -> dict:
    """Runs in its own process: load, time the store, FAISS and one read."""
    import faiss

    from connectors.embedded.store import EmbeddedStore
    from connectors.embedding import model_loader as embedding

    path = workdir / f"scan-{size}-{users}.sqlite"
    started = time.perf_counter()
    write_store(path, size, users, seed=size + users)
    write_s = time.perf_counter() - started

    rng = np.random.default_rng(7)
    queries = rng.standard_normal((20, DIMENSIONS), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    current = {"vector": queries[0]}
    # The scan is what is measured: the query vector is given, not encoded.
    embedding.encode = lambda texts, **_: current["vector"][None, :]

    rss_before = rss_mib()
    store = EmbeddedStore(path, now=lambda: NOW)
    started = time.perf_counter()
    store.query("q", user_id=user, k=K)
    load_s = time.perf_counter() - started
    rss_loaded = rss_mib()
    peak_loaded = peak_rss_mib()

    # The same rows as the store scans, as FAISS and the bandwidth bound see them.
    db = sqlite3.connect(path)
    scanned_rows = db.execute("SELECT id, embedding FROM memories WHERE user_id = ? ORDER BY rowid", (user,)).fetchall()
    db.close()
    ids = [r[0] for r in scanned_rows]
    matrix = np.frombuffer(b"".join(r[1] for r in scanned_rows), dtype=np.float32).reshape(len(ids), DIMENSIONS).copy()
    del scanned_rows
    scanned = len(matrix)
    index = faiss.IndexFlatIP(DIMENSIONS)
    index.add(matrix)
    default_threads = faiss.omp_get_max_threads()
    rows = store._by_user[user]

    def faiss_with(threads: int):
        faiss.omp_set_num_threads(threads)
        index.search(queries[:1], K)

    contenders = {
        "before_ms": lambda: previous_scan(store, queries[0], rows, K),
        "scan_ms": lambda: store._scan(queries[0], rows, K),
        "rank_ms": lambda: store._rank(queries[0], rows, K),
        "query_ms": lambda: store.query("q", user_id=user, k=K),
        "faiss_1t_ms": lambda: faiss_with(1),
        "read_ms": lambda: np.sum(matrix),
    }
    # Round-robin, so that every contender sees the same moments of a shared,
    # noisy machine; the median of each is reported.
    for run in contenders.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats_for(scanned)):
        for name, run in contenders.items():
            times[name] += timed(run, repeat=1, warmup=0)
    medians = {name: median(values) for name, values in times.items()}
    # FAISS with its default threads is timed apart, after the round-robin: its
    # OpenMP workers keep spinning for a while after each search and took the core
    # the next contender in the round needed (every contender after it ran slow).
    medians["faiss_ms"] = median(timed(lambda: faiss_with(default_threads), repeat=repeats_for(scanned), warmup=1))
    faiss.omp_set_num_threads(default_threads)

    semantic_only = EmbeddedStore(path, weights="semantic=1", now=lambda: NOW)
    found = total = 0
    for q in queries:
        current["vector"] = q
        mine = {h.memory_id for h in semantic_only.query("q", user_id=user, k=K).hits}
        _, best = index.search(q[None, :], K)
        exact = {ids[i] for i in best[0]}
        found += len(mine & exact)
        total += K
    store.close()
    semantic_only.close()
    return {
        "size": size,
        "users": users,
        "scanned": scanned,
        "write_s": write_s,
        "load_s": load_s,
        **medians,
        "recall": found / total,
        "rss_before": rss_before,
        "rss_loaded": rss_loaded,
        "peak_loaded": peak_loaded,
        "file_mib": path.stat().st_size / 2**20,
        "vectors_mib": size * DIMENSIONS * 4 / 2**20,
        "faiss_threads": default_threads,
    }


def run_child(args: list[str]) -> dict:
    out = subprocess.run(
        [PYTHON, "-m", "benchmarks.embedded_store", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if out.returncode:
        raise RuntimeError(f"child {args} failed:\n{out.stderr[-3000:]}")
    sys.stderr.write(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- import throughput


def varied_texts(count: int) -> list[dict]:
    """Demo memories, varied so no two texts are the same: the store would skip
    re-encoding an unchanged text, and real imports are mostly new texts."""
    from connectors.embedded.factories import DEMO_MEMORIES

    demo = [json.loads(line) for line in DEMO_MEMORIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    prefixes = ["", "As of last week, ", "The user said: ", "Noted in chat: ", "Reminder: ", "From onboarding: "]
    suffixes = ["", " (mentioned twice)", " according to the user", " since spring", " as of the last review"]
    chooser = random.Random(11)
    rows = []
    for i in range(count):
        base = demo[i % len(demo)]
        other = demo[chooser.randrange(len(demo))]["text"].lower()
        text = f"{chooser.choice(prefixes)}{base['text']}{chooser.choice(suffixes)}"
        if i >= len(demo) * len(prefixes):
            text += f"; also {other}"
        # Lengths from a few words to a long paragraph, shuffled through the file,
        # as in a real log of dialogue turns.
        for _ in range(chooser.choice([0, 0, 0, 1, 2, 4, 8, 16])):
            text += ". " + demo[chooser.randrange(len(demo))]["text"]
        rows.append(
            {
                "id": f"imp-{i:05d}",
                "user_id": f"user-{i % 50}",
                "text": f"{text} #{i}",
                "age_days": (i % 400) / 3,
                "importance": 0.5,
            }
        )
    return rows


def encode_in_file_order(texts, *, model=None, batch_size=64, progress=None):
    """The import's encoding before ONNX: sentence-transformers on each 64-row slice
    in file order, so every slice pads to its longest text."""
    import numpy as np

    from connectors.embedding import model_loader as embedding

    st_model = embedding.load_model(model)
    out = [np.empty((0, embedding.DIMENSIONS), dtype=np.float32)]
    for start in range(0, len(texts), batch_size):
        out.append(st_model.encode(list(texts[start : start + batch_size]), batch_size=batch_size, normalize_embeddings=True))
        if progress:
            progress(min(start + batch_size, len(texts)), len(texts))
    return np.concatenate(out)


def import_child(count: int, workdir: Path) -> dict:
    """Three contenders on the same texts, in one process: SentenceTransformer.encode
    (batch_size=64; the baseline), the import as it was (torch, slices in file order)
    and the import as it is (ONNX, longest first across the whole import)."""
    from connectors.embedded.store import EmbeddedStore
    from connectors.embedding import model_loader as embedding

    rows = varied_texts(count)
    source = workdir / "import.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    texts = [r["text"] for r in rows]
    words = [len(t.split()) for t in texts]

    started = time.perf_counter()
    st_model = embedding.load_model()
    torch_load_s = time.perf_counter() - started
    started = time.perf_counter()
    embedding.encoder()
    onnx_load_s = time.perf_counter() - started

    started = time.perf_counter()
    st_model.encode(texts, batch_size=64, normalize_embeddings=True)
    baseline_s = time.perf_counter() - started

    def run_import(name: str) -> tuple[float, int]:
        bar = ProgressBar(name)
        store = EmbeddedStore(workdir / f"import-{name}.sqlite")
        began = time.perf_counter()
        import_report = store.import_jsonl(source, progress=bar)
        elapsed = time.perf_counter() - began
        bar.close()
        assert import_report.imported == count and not import_report.issues, import_report.summary()
        store.close()
        return elapsed, bar.updates

    current_encode = embedding.encode
    embedding.encode = encode_in_file_order
    try:
        before_s, _ = run_import("before")
    finally:
        embedding.encode = current_encode
    after_s, bar_updates = run_import("after")
    return {
        "count": count,
        "words_min": min(words),
        "words_median": sorted(words)[len(words) // 2],
        "words_max": max(words),
        "torch_load_s": torch_load_s,
        "onnx_load_s": onnx_load_s,
        "baseline_s": baseline_s,
        "before_s": before_s,
        "after_s": after_s,
        "bar_updates": bar_updates,
        "peak": peak_rss_mib(),
    }


class ProgressBar:
    """The import_jsonl progress callback drawn as a text bar on stderr."""

    def __init__(self, label: str, width: int = 40):
        self.label, self.width, self.updates = label, width, 0
        self.started = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        self.updates += 1
        filled = int(self.width * done / total) if total else self.width
        rate = done / max(time.perf_counter() - self.started, 1e-9)
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {rate:,.0f} texts/s")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--import-count", type=int, default=3000)
    parser.add_argument("--child", choices=["scan", "import"], help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--users", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--user", default="u0", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child == "scan":
        print(json.dumps(scan_child(args.size, args.users, args.user, Path(args.workdir))))
        return
    if args.child == "import":
        print(json.dumps(import_child(args.import_count, Path(args.workdir))))
        return

    scans = []
    with tempfile.TemporaryDirectory(prefix="memlens-bench-store-") as workdir:
        for size in args.sizes:
            for users, user in ((1, "u0"), (10, "u3")):
                print(f"scan: {size:,} memories, {users} user(s)...", flush=True)
                scans.append(
                    run_child(
                        ["--child", "scan", "--size", str(size), "--users", str(users), "--user", user, "--workdir", workdir]
                    )
                )
                print(json.dumps(scans[-1]), flush=True)
                for leftover in Path(workdir).glob("scan-*"):
                    leftover.unlink()
        imported = None
        if args.import_count:  # 0: the scan only
            print(f"import: {args.import_count:,} texts...", flush=True)
            imported = run_child(["--child", "import", "--import-count", str(args.import_count), "--workdir", workdir])
            print(json.dumps(imported), flush=True)

    scan_rows, verdicts = [], []
    for s in scans:
        case = "one user" if s["users"] == 1 else f"1 of {s['users']} users"
        best_faiss = s["faiss_1t_ms"]
        scan_rows.append(
            [
                f"{s['size']:,}",
                case,
                f"{s['scanned']:,}",
                f"{s['before_ms']:.3f}",
                f"{s['scan_ms']:.3f}",
                f"{s['rank_ms']:.3f}",
                f"{s['query_ms']:.3f}",
                f"{s['faiss_ms']:.3f}",
                f"{s['faiss_1t_ms']:.3f}",
                f"{s['read_ms']:.3f}",
                f"{s['scan_ms'] / best_faiss:.2f}",
                f"{s['scan_ms'] / s['read_ms']:.2f}",
                f"{s['recall']:.2f}",
            ]
        )
        verdict = (
            f"- {s['size']:,} memories, {case} ({s['scanned']:,} scanned): scan + top-k {s['scan_ms']:.3f} ms "
            f"(before: {s['before_ms']:.3f} ms) vs FAISS flat 1 thread {best_faiss:.3f} ms: "
            f"{'met' if s['scan_ms'] <= best_faiss else 'NOT met'}"
        )
        if s["size"] == 100_000 and s["users"] == 1:
            verdict += (
                f"; vs one float32 read {s['read_ms']:.3f} ms: "
                f"{'met' if s['scan_ms'] <= s['read_ms'] else 'NOT met'}"
            )
        verdicts.append(verdict + ".")
    memory_rows = [
        [
            f"{s['size']:,}",
            f"{s['vectors_mib']:.0f}",
            f"{s['file_mib']:.0f}",
            f"{s['write_s']:.1f}",
            f"{s['load_s']:.2f}",
            f"{s['rss_before']:.0f}",
            f"{s['rss_loaded']:.0f}",
            f"{s['rss_loaded'] - s['rss_before']:.0f}",
            f"{s['peak_loaded']:.0f}",
        ]
        for s in scans
        if s["users"] == 1
    ]
    i = imported
    import_rows: list[list[str]] = []
    if i:
        import_rows = [
            [name, f"{seconds:.2f}", f"{i['count'] / seconds:.0f}", f"{i['baseline_s'] / seconds:.2f}x"]
            for name, seconds in (
                ("baseline: SentenceTransformer.encode(texts, batch_size=64)", i["baseline_s"]),
                ("before: import_jsonl, torch, 64-row slices in file order", i["before_s"]),
                ("after: import_jsonl, ONNX, longest first across the import", i["after_s"]),
            )
        ]
        verdicts.append(
            f"- import: {i['count'] / i['after_s']:.0f} texts/s = {i['baseline_s'] / i['after_s']:.2f}x the throughput of "
            f"SentenceTransformer.encode (target >= 1.0x: {'met' if i['after_s'] <= i['baseline_s'] else 'NOT met'}); "
            f"before: {i['baseline_s'] / i['before_s']:.2f}x."
        )
    body = (
        "Median ms per query, k=5, random unit float32 vectors (384 dims), every contender timed in turn "
        "(round-robin) so all see the same load. scan + top-k: EmbeddedStore._scan (cosine for every scanned "
        "memory, the recency, importance and usage components, the weighted sum, the top k with ties by id); "
        "+ hits: EmbeddedStore._rank (the same plus building the 5 Hits, texts read from SQLite); query(): the "
        "whole EmbeddedStore.query with the encoding replaced by a given vector. FAISS: IndexFlatIP.search on "
        f"the same scanned vectors, with its default {scans[0]['faiss_threads'] if scans else '?'} OpenMP threads "
        "and with 1; one f32 read: np.sum over the scanned float32 matrix. The ratios and targets use scan + top-k "
        "against FAISS with 1 thread; \"before\" is the scan as it was (recency exp per memory per query), timed in "
        "the same rounds.\n\n"
        + table(
            [
                "memories",
                "case",
                "rows scanned",
                "before: scan + top-k (ms)",
                "scan + top-k (ms)",
                "+ hits (ms)",
                "query() (ms)",
                "FAISS (ms)",
                "FAISS 1 thread (ms)",
                "one f32 read (ms)",
                "vs FAISS",
                "vs read",
                "recall@5",
            ],
            scan_rows,
        )
        + "\n\nMemory per size (one-user file; RSS of a fresh child process, MiB):\n\n"
        + table(
            [
                "memories",
                "f32 vectors (MiB)",
                "SQLite file (MiB)",
                "write file (s)",
                "first query incl. load (s)",
                "RSS before open",
                "RSS loaded",
                "RSS added",
                "peak RSS",
            ],
            memory_rows,
        )
        + "\n\nTargets (scan never slower than FAISS flat with 1 thread; import at least the baseline's throughput):\n"
        + "\n".join(verdicts)
    )
    if i:
        body = body.replace("\n\nTargets (scan never", (
            f"\n\nImport throughput, {i['count']:,} texts of {i['words_min']} to {i['words_max']} words (median "
            f"{i['words_median']}), shuffled; all three in one process, model loads excluded (torch {i['torch_load_s']:.2f} s, "
            f"ONNX {i['onnx_load_s']:.2f} s); import_jsonl includes parsing and SQLite, and drew its progress bar "
            f"{i['bar_updates']} times:\n\n"
            + table(["contender", "seconds", "texts/s", "throughput vs baseline"], import_rows)
            + "\n\nTargets (scan never"
        ), 1)
    report("embedded_store: scan vs FAISS vs one read, import throughput, memory", body)


if __name__ == "__main__":
    main()
