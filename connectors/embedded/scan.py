"""The embedded store's scan: score every memory of a slice and pick the top k.

score = w_semantic * clip(cosine, 0, 1) + w_recency * recency + w_importance *
importance + w_usage * usage. Only the cosine depends on the query; the rest
depends on the clock alone, and the clock enters as one factor:

    recency = exp(-(now - created) * rate)
            = exp(-(now - newest) * rate) * exp(-(newest - created) * rate)

for `now` at or after the newest memory. So the second factor is computed once per
load (`Anchored`), and a query costs the matrix-vector product plus a handful of
passes over one float array: no exp per memory, no temporaries of its size. That
keeps the scan at or under FAISS's flat inner-product search on the same vectors
(benchmarks/embedded_store.py). A clock earlier than the newest memory (a test's
fixed "now", a memory dated in the future) takes the direct route.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

# Matrix sizes (rows x dims) at or under which numpy's OpenBLAS keeps a
# matrix-vector product on one thread by itself: measured, 1,000 x 384 stays on one
# thread and 2,000 x 384 goes to two (and, on a busy machine, 300 times slower).
SINGLE_THREADED_BELOW = 1_024 * 384

_blas_controller = None
_blas_lock = threading.Lock()
_pool_lock = threading.Lock()  # guards the scan pool's creation only


@contextmanager
def single_threaded_blas():
    """A context in which numpy's BLAS runs on one thread.

    OpenBLAS's own threads spin while they wait, so on a busy machine (a shared
    2-core server, other sessions) they fight each other: benchmarks/embedded_store.py
    measured 1.2 ms single-threaded against 21 ms with two threads at 10,000
    memories under load. `scan` uses the cores through its own threads instead,
    each running a single-threaded product on its part of the slice."""
    global _blas_controller
    if _blas_controller is None:
        from threadpoolctl import ThreadpoolController

        _blas_controller = ThreadpoolController().select(user_api="blas")
    # The thread count is process-wide: one scan at a time sets and restores it,
    # so overlapping scans of two stores cannot leave it at one for good.
    with _blas_lock, _blas_controller.limit(limits=1):
        yield


def recency_rate(half_life_hours: float) -> float:
    return math.log(2) / (half_life_hours * 3600.0)


@dataclass
class Anchored:
    """What the non-semantic part of every score needs, computed once per load."""

    newest: float  # the latest created_at (epoch seconds)
    decayed: np.ndarray  # exp(-(newest - created) * rate), float64
    fixed: np.ndarray  # w_importance * importance + w_usage * usage, float64
    key: tuple

    @classmethod
    def build(cls, created: np.ndarray, fixed: np.ndarray, rate: float, key: tuple) -> Anchored:
        newest = float(created.max()) if len(created) else 0.0
        decayed = np.subtract(created, newest)
        decayed *= rate
        np.exp(decayed, out=decayed)
        return cls(newest=newest, decayed=decayed, fixed=fixed, key=key)


def scan(
    vectors: np.ndarray,
    query_vector: np.ndarray,
    *,
    created: np.ndarray,
    anchored: Anchored,
    rows: slice,
    now: float,
    rate: float,
    weights: dict[str, float],
) -> tuple[np.ndarray, np.ndarray]:
    """(score float64, semantic float32) for every memory in `rows`.

    A large slice is cut into one part per core and the parts are scored at once,
    each on its own thread with single-threaded BLAS (numpy releases the GIL for
    the product and the passes). Unlike a multi-threaded BLAS, a thread waiting for
    a core here sleeps instead of spinning, so a busy machine costs about what a
    single thread would (benchmarks/embedded_store.py)."""
    count = len(vectors)
    score = np.empty(count, dtype=np.float64)
    semantic = np.empty(count, dtype=np.float32)
    anchored_clock = now >= anchored.newest
    recency_factor = weights["recency"] * math.exp(-(now - anchored.newest) * rate) if anchored_clock else 0.0
    start = rows.start or 0

    def score_part(part: slice) -> None:
        # Offsets into the whole store's arrays for the per-memory columns.
        stored = slice(start + part.start, start + part.stop)
        out = semantic[part]
        np.matmul(vectors[part], query_vector, out=out)
        np.clip(out, 0.0, 1.0, out=out)
        total = score[part]
        if anchored_clock:
            np.multiply(anchored.decayed[stored], recency_factor, out=total)
        else:
            np.subtract(now, created[stored], out=total)
            np.maximum(total, 0.0, out=total)
            total *= -rate
            np.exp(total, out=total)
            total *= weights["recency"]
        total += anchored.fixed[stored]
        # One float32 temporary (scaled semantic) instead of a float64 one.
        total += np.multiply(out, np.float32(weights["semantic"]))

    parts = _parts(count)
    if len(parts) == 1 and vectors.size <= SINGLE_THREADED_BELOW:
        # OpenBLAS runs a product this small on one thread anyway, and setting the
        # thread count costs as much as the product itself.
        score_part(parts[0])
        return score, semantic
    with single_threaded_blas():
        others = [_pool().submit(score_part, part) for part in parts[1:]]
        score_part(parts[0])
        for other in others:
            other.result()
    return score, semantic


# Rows per part at the least: under it, handing a part to another thread costs more
# than the part's product saves (measured: a 2-way split gains 0.2 ms at 10,000
# rows on an idle 2-core machine, and loses about 0.1 ms there when both cores are busy).
MIN_PART_ROWS = 4_096
SCAN_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
_scan_pool: ThreadPoolExecutor | None = None


def _parts(count: int) -> list[slice]:
    """`count` rows cut into at most SCAN_THREADS parts of at least MIN_PART_ROWS."""
    n = max(1, min(SCAN_THREADS, count // MIN_PART_ROWS))
    bounds = [count * i // n for i in range(n + 1)]
    return [slice(bounds[i], bounds[i + 1]) for i in range(n)]


def _pool() -> ThreadPoolExecutor:
    global _scan_pool
    with _pool_lock:
        if _scan_pool is None:
            _scan_pool = ThreadPoolExecutor(max_workers=max(1, SCAN_THREADS - 1), thread_name_prefix="memlens-scan")
    return _scan_pool


def top_k(score: np.ndarray, ids: np.ndarray, k: int) -> list[int]:
    """Positions of the k best scores, best first, ties broken by id."""
    top = min(k, len(score))
    if top < len(score):
        # Every row tied with the k-th score is a candidate, so which of them gets
        # in is decided by id below, not by partition's arbitrary pick.
        kth = np.partition(score, len(score) - top)[len(score) - top]
        candidates = np.flatnonzero(score >= kth)
    else:
        candidates = np.arange(len(score))
    return sorted(candidates.tolist(), key=lambda i: (-float(score[i]), ids[i]))[:top]
