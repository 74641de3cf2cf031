"""What-if weights: re-score a run's stored candidates with other component weights.

A run keeps every hit's breakdown (semantic, recency, importance, usage for the
embedded store; whatever components MemorySync, Mem0 or another store sends), so
``score = sum(weight_c * component_c)`` can be recomputed for any weights without
querying the store again. The search tries every weighting on a grid over the
simplex (weights summing to 1; and, if asked, score floors under which a
candidate is dropped) and keeps the one with the best value of a chosen metric.

Honesty rules, the same on the page and in ``memlens whatif``:

- a weighting under which the weighted scores distinguish no candidate (every
  question's candidates score the same, e.g. all weight on ``usage`` when no memory
  was ever used) is not a ranking at all: its order would be the tie rule's. Such
  weightings are left out of the search, and counted;
- ties are broken by one stated rule. Candidates with equal weighted scores keep the
  store's own order (its rank); each setting reports in how many questions the tie
  rule decided the top n. Settings with equal search-split values are ranked by
  the distance (sum of absolute differences) of their weights from the store's own,
  nearest first, then by lower floor, then by grid order; the result says how
  many settings shared the best value;
- only a setting whose gain on the held-out questions is positive and beyond its
  noise is a recommendation: the best setting on the search split, whose 95%
  interval of the held-out gain (a seeded bootstrap over the held-out questions'
  paired differences) lies above zero. Otherwise the result says "nothing to
  apply" and why, and offers no weights. A share of a negative gain is not given;
- recall, precision and hit rate at a depth n at or past the run's k count the
  same k candidates whatever their order: re-ranking cannot change them. The
  result says so, and to evaluate with a larger k first.

Two limits, stated wherever the result is shown:

- only the candidates the run fetched can move. A memory the store ranked below k
  is not in the run, so fetch deeper (k up to the store's limit) than the depth
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
from typing import Any

import numpy as np

from connectors.common.errors import MemlensError
from dashboard.database import AppDatabase
from dashboard.database.runs import QueryOutcome, RunInfo
from dashboard.judged import JudgedQuestion

METRICS = ("recall", "precision", "mrr", "ndcg", "hit_rate")
# Metrics of the set of the top n, not of its order: at n >= k re-ranking cannot move them.
ORDER_BLIND = ("recall", "precision", "hit_rate")
GAIN_RESAMPLES = 2_000  # bootstrap resamples of the held-out questions for the gain's interval
GAIN_CONFIDENCE = 0.95
HELD_OUT_SHARE = 0.3
SEED = 0
DEFAULT_STEP = 0.1
# The floors "Also search a threshold" (and `memlens whatif --threshold`) tries: both
# say "threshold" (a widget label and a flag kept as they are), the search means a floor.
FLOORS = tuple(round(0.05 * i, 2) for i in range(13))
# Two weighted scores closer than this are a tie: equal components give equal sums,
# but summed in another order they may differ in the last bit.
TIE = 1e-12
# A gain under this is no gain (float noise in a mean of per-question values).
MIN_GAIN = 1e-9
TIE_RULE = (
    "equal weighted scores keep the store's own order; settings with equal search-split values go nearest "
    "the store's own weights first, then lower threshold, then grid order"
)


class WhatIfError(MemlensError, ValueError):
    """A run the search cannot work on (no breakdown, depth n past k, ...)."""


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
    scores: np.ndarray  # [Q, K] the scores the store sent (0 where it sent none)


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
    scores = np.zeros((len(chosen), width))
    longest = max((sum(1 for g in q.grades.values() if g > 0) for q in chosen), default=0)
    ideal = np.zeros((len(chosen), max(1, longest)))
    own: dict[str, float] = {}
    for i, q in enumerate(chosen):
        for j, hit in enumerate(sorted(by_id[q.message_id].hits, key=lambda h: h.rank)):
            present[i, j] = True
            scores[i, j] = hit.score if hit.score is not None else 0.0
            grade[i, j] = max(0, q.grades.get(hit.memory_id, 0))
            for c, name in enumerate(components):
                values[i, j, c] = hit.breakdown.get(name, 0.0)
            if not own and hit.weights:
                own = {name: float(hit.weights.get(name, 0.0)) for name in components}
        grades = sorted((g for g in q.grades.values() if g > 0), reverse=True)
        ideal[i, : len(grades)] = grades
    relevant = (ideal > 0).sum(axis=1)
    return Candidates([q.message_id for q in chosen], components, values, present, grade, relevant, ideal, own, scores)


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


def weighted(cands: Candidates, weights: np.ndarray) -> np.ndarray:
    """[Q, K] weighted scores, -inf where there is no hit."""
    return np.where(cands.present, cands.values @ weights, -np.inf)


def evaluate(cands: Candidates, weights: np.ndarray | None, floor: float, metric: str, n: int) -> np.ndarray:
    """Per-question metric for `weights` (None: the store's own order)."""
    if weights is None:
        order = np.tile(np.arange(cands.present.shape[1]), (len(cands.present), 1))
        kept = cands.present
    else:
        score = weighted(cands, weights)
        # Stable: equal scores keep the store's order (the tie rule, see the module docstring).
        order = np.argsort(-score, axis=1, kind="stable")
        kept = np.take_along_axis(score, order, axis=1) >= floor
        kept &= np.take_along_axis(cands.present, order, axis=1)
    return metric_per_question(cands, order, kept, metric, n)


def distinguishes(score: np.ndarray, present: np.ndarray) -> bool:
    """Do these [Q, K] scores tell any two candidates of one question apart? False
    when, in every question, all its candidates score the same."""
    spread = np.where(present, score, -np.inf).max(axis=1) - np.where(present, score, np.inf).min(axis=1)
    several = present.sum(axis=1) >= 2
    return bool((spread[several] > TIE).any())


def tied_questions(score: np.ndarray, present: np.ndarray, n: int) -> int:
    """How many questions' top n the tie rule decided: after sorting, two candidates
    with equal scores next to each other at a position up to n (inside the top n, or
    one inside and one just outside it)."""
    ordered = -np.sort(-np.where(present, score, -np.inf), axis=1)
    width = min(n + 1, ordered.shape[1])
    head = ordered[:, :width]
    both = np.isfinite(head[:, :-1]) & np.isfinite(head[:, 1:])
    equal = both & (np.abs(head[:, :-1] - head[:, 1:]) <= TIE)
    return int(equal.any(axis=1).sum())


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
    floor: float  # hits scoring under it are dropped (0: none)
    train: float
    held_out: float
    tied: int = 0  # questions whose top n the tie rule decided


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
    own_tied: int = 0  # questions whose top n had equal store scores
    best_ties: int = 1  # settings sharing the best search-split value (the tie rule picked one)
    degenerate: int = 0  # weightings left out: their scores distinguish no candidate
    tried: int = 0  # settings tried
    held_out_interval: tuple[float, float] = (0.0, 0.0)  # 95% bootstrap interval of the held-out gain

    @property
    def order_blind(self) -> bool:
        """Re-ranking the run's k candidates cannot change this metric (n >= k, a set metric)."""
        return self.metric in ORDER_BLIND and self.n >= self.k

    @property
    def recommended(self) -> Setting | None:
        """The best setting when it beats the store's own weights on the search split and
        its held-out gain is above zero beyond noise (the interval's low end); else None."""
        if self.train_gain <= MIN_GAIN or self.held_out_gain <= MIN_GAIN or self.held_out_interval[0] <= 0:
            return None
        return self.best

    def why_nothing(self) -> str | None:
        """Why there is nothing to apply; None when there is a recommendation."""
        if self.recommended is not None:
            return None
        if self.order_blind:
            return (
                f"re-ranking the run's {self.k} candidates cannot change {self.metric}@{self.n}: at n >= k it counts "
                f"the same {self.k} memories in any order. Evaluate with a larger k first (memlens eval ... --k "
                f"{max(2 * self.k, 50)}), then search at n={self.n}"
            )
        if self.train_gain <= MIN_GAIN:
            return "no weighting beats the store's own on the search split"
        low, high = self.held_out_interval
        if self.held_out_gain <= MIN_GAIN:
            return (
                f"the best weighting on the search split (gain {self.train_gain:+.4f}) does not gain on the held-out "
                f"questions ({self.held_out_gain:+.4f}): it is fitted to the search split"
            )
        return (
            f"the held-out gain {self.held_out_gain:+.4f} is within its noise ({GAIN_CONFIDENCE:.0%} interval "
            f"{low:+.4f} to {high:+.4f} over the {self.held_out_questions} held-out questions)"
        )

    @property
    def train_gain(self) -> float:
        return self.best.train - self.own_train

    @property
    def held_out_gain(self) -> float:
        return self.best.held_out - self.own_held_out

    @property
    def share_held(self) -> float | None:
        """How much of the gain found on the search split held on the other one; None
        when either gain is not positive (a share of a loss means nothing)."""
        if self.train_gain <= 1e-12 or self.held_out_gain <= MIN_GAIN:
            return None
        return self.held_out_gain / self.train_gain

    def summary(self) -> str:
        why = self.why_nothing()
        if why is not None and self.train_gain <= MIN_GAIN and not self.order_blind:
            return (
                f"{self.metric}@{self.n}: no weighting beats the store's own ({self.own_train:.4f}) on the search "
                f"split ({self.train_questions} questions; best tried {self.best.train:.4f}): nothing to apply"
            )
        if why is not None:
            return (
                f"{self.metric}@{self.n}: store's own {self.own_train:.4f} on the search split ({self.train_questions} "
                f"questions; best tried {self.best.train:.4f}), {self.own_held_out:.4f} -> {self.best.held_out:.4f} "
                f"held out ({self.held_out_questions} questions): nothing to apply: {why}"
            )
        held = self.share_held
        share = f" ({held:.0%} of the gain held)" if held is not None else ""
        return (
            f"{self.metric}@{self.n}: store's own {self.own_train:.4f} -> best {self.best.train:.4f} "
            f"on the search split ({self.train_questions} questions); on the held-out split "
            f"({self.held_out_questions} questions) {self.own_held_out:.4f} -> {self.best.held_out:.4f}, "
            f"gain {self.held_out_gain:+.4f}{share}"
        )

    def notes(self) -> list[str]:
        """The tie and degeneracy counts, in sentences (the page's captions, the CLI's `note:` lines)."""
        notes = [f"ties: {TIE_RULE}."]
        if self.degenerate:
            notes.append(
                f"{self.degenerate} weighting(s) left out: under them every question's candidates score the same "
                "(e.g. all weight on a component that is constant in this run), so their order would be the tie rule's."
            )
        if self.best_ties > 1:
            notes.append(f"{self.best_ties} settings share the best search-split value; the tie rule picked the one shown.")
        notes.append(
            f"the tie rule decided the top {self.n} of {self.best.tied} question(s) under the best setting "
            f"({self.own_tied} under the store's own scores)."
        )
        return notes

    def as_dict(self) -> dict[str, Any]:
        """The JSON report of `memlens whatif --format json`."""

        def setting(s: Setting) -> dict[str, Any]:
            # "threshold" is the JSON field's name (kept as it is); it holds the floor.
            return {"weights": s.weights, "threshold": s.floor, "search_split": s.train,
                    "held_out": s.held_out, "tied_questions": s.tied}

        recommended = self.recommended
        return {
            "metric": self.metric, "n": self.n, "k": self.k, "components": self.components,
            "own": {"weights": self.own_weights, "search_split": self.own_train, "held_out": self.own_held_out,
                    "tied_questions": self.own_tied},
            "best": setting(self.best),
            "recommended": setting(recommended) if recommended is not None else None,
            "train_gain": self.train_gain, "held_out_gain": self.held_out_gain,
            "held_out_gain_interval": list(self.held_out_interval), "nothing_to_apply": self.why_nothing(),
            "search_questions": self.train_questions, "held_out_questions": self.held_out_questions,
            "settings_tried": self.tried, "degenerate_weightings": self.degenerate,
            "settings_sharing_best": self.best_ties, "tie_rule": TIE_RULE,
            "top": [setting(s) for s in self.top],
        }


def weights_text(weights: dict[str, float]) -> str:
    return ",".join(f"{name}={value:g}" for name, value in weights.items())


def search(
    questions: Sequence[JudgedQuestion],
    outcomes: Sequence[QueryOutcome],
    *,
    metric: str,
    n: int,
    k: int,
    step: float = DEFAULT_STEP,
    floors: Sequence[float] = (0.0,),
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
    if not 0 < step <= 1 or abs(1 / step - round(1 / step)) > 1e-9:
        raise WhatIfError(f"the grid step {step:g} must divide 1 into whole steps (0.1, 0.2, 0.25, 0.5, 1)")
    if len(cands.components) > 6:
        step = max(step, 0.25)  # keeps the grid to a few thousand weightings
    rng = np.random.default_rng(seed)
    shuffled = rng.permutation(len(cands.message_ids))
    cut = max(1, min(len(shuffled) - 1, round(len(shuffled) * held_out_share)))
    held, train = np.zeros(len(shuffled), bool), np.zeros(len(shuffled), bool)
    held[shuffled[:cut]] = True
    train[shuffled[cut:]] = True
    own = evaluate(cands, None, -math.inf, metric, n)
    own_vector = np.array([cands.own_weights.get(c, 0.0) for c in cands.components])
    settings: list[Setting] = []
    distance: list[float] = []
    degenerate = 0
    for weights in weight_grid(len(cands.components), step):
        score = weighted(cands, weights)
        if not distinguishes(score, cands.present):
            degenerate += 1
            continue
        tied = tied_questions(score, cands.present, n)
        for floor in floors:
            per_question = evaluate(cands, weights, floor, metric, n)
            settings.append(
                Setting(
                    weights={c: round(float(w), 6) for c, w in zip(cands.components, weights, strict=True)},
                    floor=float(floor),
                    train=float(per_question[train].mean()),
                    held_out=float(per_question[held].mean()),
                    tied=tied,
                )
            )
            distance.append(float(np.abs(weights - own_vector).sum()))
    if not settings:
        raise WhatIfError(
            "under every weighting on the grid the candidates' scores tie in every question: "
            "the run's components do not tell its candidates apart"
        )
    # Best on the search split only; ties by the stated rule (TIE_RULE), grid order last.
    position = sorted(
        range(len(settings)),
        key=lambda i: (-round(settings[i].train, 12), round(distance[i], 9), settings[i].floor, i),
    )
    ranked = [settings[i] for i in position]
    best_value = round(ranked[0].train, 12)
    best_weights = np.array([ranked[0].weights[c] for c in cands.components])
    best_per_question = evaluate(cands, best_weights, ranked[0].floor, metric, n)
    interval = gain_interval(best_per_question[held] - own[held], seed)
    own_scores = np.where(cands.present, cands.scores, -np.inf)
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
        own_tied=tied_questions(own_scores, cands.present, n),
        best_ties=sum(1 for s in settings if round(s.train, 12) == best_value),
        degenerate=degenerate,
        tried=len(settings),
        held_out_interval=interval,
    )


def gain_interval(deltas: np.ndarray, seed: int = SEED) -> tuple[float, float]:
    """The GAIN_CONFIDENCE percentile interval of the mean of `deltas` (paired
    per-question differences), by a seeded bootstrap over the questions."""
    if len(deltas) == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = deltas[rng.integers(0, len(deltas), size=(GAIN_RESAMPLES, len(deltas)))].mean(axis=1)
    tail = (1 - GAIN_CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def search_run(
    db: AppDatabase, info: RunInfo, *, metric: str, n: int, step: float = DEFAULT_STEP, search_floor: bool = False
) -> WhatIfResult:
    """The search on a saved run, as the Quality page and `memlens whatif` run it:
    the depth n clipped to the run's k, the floors of FLOORS when asked (`search_floor`)."""
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    if judged is None:
        raise WhatIfError(f"the run's judged set ({info.set_name}, {info.set_hash}) is gone")
    return search(
        judged.questions, db.runs.outcomes(info.run_id), metric=metric, n=min(n, info.k), k=info.k, step=step,
        floors=FLOORS if search_floor else (0.0,),
    )


def weights_to_apply(result: WhatIfResult, store: str) -> str | None:
    """The weights text to offer (a button, a --weights hint): only for a
    recommendation on the embedded store, whose weights memlens can set."""
    recommended = result.recommended
    if recommended is None or store != "embedded":
        return None
    return weights_text(recommended.weights)
