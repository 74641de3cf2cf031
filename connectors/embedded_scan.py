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
import threading
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

# Matrix sizes (rows x dims) at or under which numpy's OpenBLAS keeps a
# matrix-vector product on one thread by itself: measured, 1,000 x 384 stays on one
# thread and 2,000 x 384 goes to two (and, on a busy machine, 300 times slower).
SINGLE_THREADED_BELOW = 1_024 * 384

_blas_controller = None
_blas_lock = threading.Lock()


@contextmanager
def single_threaded_blas():
    """A context in which numpy's BLAS runs on one thread.

    A query is one matrix-vector product, which is memory-bound: a second thread
    buys little on an idle machine, and on a busy one (a shared 2-core server, other
    sessions) OpenBLAS threads spin against each other. benchmarks/embedded_store.py
    measured 1.2 ms single-threaded against 21 ms with two threads at 10,000
    memories under load."""
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
    """(score float64, semantic float32) for every memory in `rows`."""
    if vectors.size <= SINGLE_THREADED_BELOW:
        # OpenBLAS runs a product this small on one thread anyway, and setting the
        # thread count costs as much as the product itself.
        semantic = vectors @ query_vector
    else:
        with single_threaded_blas():
            semantic = vectors @ query_vector
    np.clip(semantic, 0.0, 1.0, out=semantic)
    if now >= anchored.newest:
        score = np.multiply(anchored.decayed[rows], weights["recency"] * math.exp(-(now - anchored.newest) * rate))
    else:
        seconds = np.subtract(now, created[rows])
        np.maximum(seconds, 0.0, out=seconds)
        seconds *= -rate
        score = np.exp(seconds, out=seconds)
        score *= weights["recency"]
    score += anchored.fixed[rows]
    # One float32 temporary (scaled semantic) instead of a float64 one.
    score += np.multiply(semantic, np.float32(weights["semantic"]))
    return score, semantic


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
