"""What-if weights: re-score a run's stored candidates with other component weights.

A run keeps every hit's breakdown (semantic, recency, importance, usage for the
embedded store; whatever components MemorySync, Mem0 or another store sends), so
``score = sum(weight_c * component_c)`` can be recomputed for any weights without
querying the store again. The search tries every weighting on a grid over the
simplex (weights summing to 1; and, if asked, score thresholds under which a
candidate is dropped) and keeps the one with the best value of a chosen metric.

Two limits, stated wherever the result is shown:

- only the candidates the run fetched can move. A memory the store ranked below k
  is not in the run, so fetch deeper (k up to the store's limit) than the cutoff
  the metric is taken at;
- the best weights on a judged set are partly fitted to that set. The search runs
  on a seeded split of the questions and reports the gain again on the held-out
  part: that figure is the one to believe.

Pure numpy: no Streamlit, no store calls.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dashboard.evaluation.judged_sets import JudgedQuestion
from dashboard.evaluation.storage import QueryOutcome

METRICS = ("recall", "precision", "mrr", "ndcg", "hit_rate")
HELD_OUT_SHARE = 0.3
SEED = 0


class WhatIfError(ValueError):
    """A run the search cannot work on (no breakdown, cutoff past k, ...)."""


@dataclass
class Candidates:
    """A run's candidates as arrays: Q questions, K hits, C components."""

    message_ids: list[str]
    components: list[str]
    values: np.ndarray  # [Q, K, C] component values (0 where a hit lacks one)
    present: np.ndarray  # [Q, K] a hit is there
    grade: np.ndarray  # [Q, K] the judged grade of each hit (0: not relevant / not judged)
    relevant: np.ndarray  # [Q] how many memories are judged relevant
    ideal: np.ndarray  # [Q, n] the ideal grades, best first (for nDCG)
    own_weights: dict[str, float]


def candidates(questions: Sequence[JudgedQuestion], outcomes: Sequence[QueryOutcome]) -> Candidates:
    """The answerable questions the run answered, with their hits in store order."""
    by_id = {o.message_id: o for o in outcomes}
    chosen = [q for q in questions if q.answerable and q.message_id in by_id]
    components = sorted({c for q in chosen for h in by_id[q.message_id].hits for c in h.breakdown})
    if not components:
        raise WhatIfError("no hit in this run has a score breakdown: there are no components to re-weight")
    width = max((len(by_id[q.message_id].hits) for q in chosen), default=0)
    values = np.zeros((len(chosen), width, len(components)))
    present = np.zeros((len(chosen), width), dtype=bool)
    grade = np.zeros((len(chosen), width))
    longest = max((sum(1 for g in q.grades.values() if g > 0) for q in chosen), default=0)
    ideal = np.zeros((len(chosen), max(1, longest)))
    own: dict[str, float] = {}
    for i, q in enumerate(chosen):
        for j, hit in enumerate(sorted(by_id[q.message_id].hits, key=lambda h: h.rank)):
            present[i, j] = True
            grade[i, j] = max(0, q.grades.get(hit.memory_id, 0))
            for c, name in enumerate(components):
                values[i, j, c] = hit.breakdown.get(name, 0.0)
            if not own and hit.weights:
                own = {name: float(hit.weights.get(name, 0.0)) for name in components}
        grades = sorted((g for g in q.grades.values() if g > 0), reverse=True)
        ideal[i, : len(grades)] = grades
    relevant = (ideal > 0).sum(axis=1)
    return Candidates([q.message_id for q in chosen], components, values, present, grade, relevant, ideal, own)


def metric_per_question(
    cands: Candidates, order: np.ndarray, kept: np.ndarray, metric: str, n: int
) -> np.ndarray:
    """The metric of each question for hits in `order` ([Q, K] positions), of
    which `kept` ([Q, K], in that order) reach the result."""
    top_grade = np.take_along_axis(cands.grade, order, axis=1)[:, :n] * kept[:, :n]
    relevant_top = top_grade > 0
    if metric == "precision":
        return relevant_top.sum(axis=1) / n
    if metric == "recall":
        return relevant_top.sum(axis=1) / cands.relevant
    if metric == "hit_rate":
        return relevant_top.any(axis=1).astype(float)
    if metric == "mrr":
        first = np.argmax(relevant_top, axis=1)
        return np.where(relevant_top.any(axis=1), 1.0 / (first + 1), 0.0)
    if metric == "ndcg":
        discount = 1.0 / np.log2(np.arange(2, n + 2))
        dcg = (top_grade * discount[: top_grade.shape[1]]).sum(axis=1)
        ideal = cands.ideal[:, :n]
        idcg = (ideal * discount[: ideal.shape[1]]).sum(axis=1)
        return dcg / idcg
    raise WhatIfError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")


def evaluate(cands: Candidates, weights: np.ndarray | None, threshold: float, metric: str, n: int) -> np.ndarray:
    """Per-question metric for `weights` (None: the store's own order)."""
    if weights is None:
        order = np.tile(np.arange(cands.present.shape[1]), (len(cands.present), 1))
        kept = cands.present
    else:
        score = np.where(cands.present, cands.values @ weights, -np.inf)
        # Stable: equal scores keep the store's order.
        order = np.argsort(-score, axis=1, kind="stable")
        kept = np.take_along_axis(score, order, axis=1) >= threshold
        kept &= np.take_along_axis(cands.present, order, axis=1)
    return metric_per_question(cands, order, kept, metric, n)


def weight_grid(components: int, step: float) -> np.ndarray:
    """Every weighting on the simplex in steps of `step`: [M, C], rows summing to 1."""
    units = round(1 / step)
    rows = [
        combo
        for combo in itertools.product(range(units + 1), repeat=components)
        if sum(combo) == units
    ]
    return np.array(rows, dtype=float) / units


@dataclass
class Setting:
    weights: dict[str, float]
    threshold: float
    train: float
    held_out: float


@dataclass
class WhatIfResult:
    metric: str
    n: int
    k: int
    components: list[str]
    own_weights: dict[str, float]
    own_train: float
    own_held_out: float
    best: Setting
    top: list[Setting] = field(default_factory=list)
    train_questions: int = 0
    held_out_questions: int = 0

    @property
    def train_gain(self) -> float:
        return self.best.train - self.own_train

    @property
    def held_out_gain(self) -> float:
        return self.best.held_out - self.own_held_out

    @property
    def share_held(self) -> float | None:
        """How much of the gain found on the search split held on the other one."""
        return self.held_out_gain / self.train_gain if self.train_gain > 1e-12 else None

    def summary(self) -> str:
        held = self.share_held
        share = f" ({held:.0%} of the gain held)" if held is not None else ""
        return (
            f"{self.metric}@{self.n}: store's own {self.own_train:.4f} -> best {self.best.train:.4f} "
            f"on the search split ({self.train_questions} questions); on the held-out split "
            f"({self.held_out_questions} questions) {self.own_held_out:.4f} -> {self.best.held_out:.4f}, "
            f"gain {self.held_out_gain:+.4f}{share}"
        )


def weights_text(weights: dict[str, float]) -> str:
    return ",".join(f"{name}={value:g}" for name, value in weights.items())


def search(
    questions: Sequence[JudgedQuestion],
    outcomes: Sequence[QueryOutcome],
    *,
    metric: str,
    n: int,
    k: int,
    step: float = 0.1,
    thresholds: Sequence[float] = (0.0,),
    held_out_share: float = HELD_OUT_SHARE,
    seed: int = SEED,
    keep_top: int = 10,
) -> WhatIfResult:
    if metric not in METRICS:
        raise WhatIfError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if n < 1 or n > k:
        raise WhatIfError(f"the cutoff n={n} must be from 1 to the run's k={k}")
    cands = candidates(questions, outcomes)
    if len(cands.message_ids) < 4:
        raise WhatIfError("the search needs at least 4 answerable questions to split")
    if len(cands.components) > 6:
        step = max(step, 0.25)  # keeps the grid to a few thousand weightings
    rng = np.random.default_rng(seed)
    shuffled = rng.permutation(len(cands.message_ids))
    cut = max(1, min(len(shuffled) - 1, round(len(shuffled) * held_out_share)))
    held, train = np.zeros(len(shuffled), bool), np.zeros(len(shuffled), bool)
    held[shuffled[:cut]] = True
    train[shuffled[cut:]] = True
    own = evaluate(cands, None, -math.inf, metric, n)
    settings: list[Setting] = []
    for weights in weight_grid(len(cands.components), step):
        for threshold in thresholds:
            per_question = evaluate(cands, weights, threshold, metric, n)
            settings.append(
                Setting(
                    weights={c: round(float(w), 6) for c, w in zip(cands.components, weights, strict=True)},
                    threshold=float(threshold),
                    train=float(per_question[train].mean()),
                    held_out=float(per_question[held].mean()),
                )
            )
    # Best on the search split only; ties go to the earlier grid point (stable sort).
    ranked = sorted(settings, key=lambda s: -s.train)
    return WhatIfResult(
        metric=metric,
        n=n,
        k=k,
        components=cands.components,
        own_weights=cands.own_weights,
        own_train=float(own[train].mean()),
        own_held_out=float(own[held].mean()),
        best=ranked[0],
        top=ranked[:keep_top],
        train_questions=int(train.sum()),
        held_out_questions=int(held.sum()),
    )
