"""Two runs of one judged set, question by question, with a paired significance test.

For a metric (e.g. recall@10), each question the metric is defined on and both
runs answered gives a pair (A, B). From the pairs: the mean of each run, the mean
delta B - A, wins / ties / losses for B, and a paired randomisation test: under
"the runs are interchangeable" each question's delta is as likely to have either
sign, so flipping signs at random (fixed seed, 10,000 times) shows how often a
mean delta at least as far from 0 as the observed one happens by chance. That
share is the two-sided p-value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

import numpy as np

from connectors.common.errors import MemlensError
from connectors.common.score_spaces import describe_formula, formula_of_pairs
from dashboard.database.runs import QueryOutcome, RunInfo
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.evaluation.run_figures import PER_TURN, POOLED, QueryFigures, run_figures
from dashboard.floor import floor_text

PERMUTATIONS = 10_000
SEED = 0
SIGNIFICANCE = 0.05
TIE_TOLERANCE = 1e-12


class CompareError(MemlensError, ValueError):
    """Two runs that cannot be compared (other judged set, metric not in the run)."""


@dataclass(frozen=True)
class QueryDelta:
    message_id: str
    user_id: str | None
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass
class Comparison:
    metric: str
    run_a: RunInfo
    run_b: RunInfo
    deltas: list[QueryDelta]
    mean_a: float
    mean_b: float
    wins: int
    ties: int
    losses: int
    p_value: float

    @property
    def mean_delta(self) -> float:
        return self.mean_b - self.mean_a

    @property
    def significant(self) -> bool:
        return self.p_value < SIGNIFICANCE

    def worst(self, limit: int = 10) -> list[QueryDelta]:
        """The questions B lost most on, worst first."""
        return sorted((d for d in self.deltas if d.delta < -TIE_TOLERANCE), key=lambda d: (d.delta, d.message_id))[:limit]

    def regressed(self, max_drop: float) -> bool:
        """B worse than A on the metric by more than `max_drop`, with p < 0.05."""
        return self.mean_delta < -max_drop and self.significant


def paired_randomisation_p(deltas: np.ndarray, permutations: int = PERMUTATIONS, seed: int = SEED) -> float:
    """Two-sided p of the mean of paired deltas under random sign flips."""
    deltas = np.asarray(deltas, dtype=np.float64)
    if len(deltas) == 0 or np.all(np.abs(deltas) <= TIE_TOLERANCE):
        return 1.0
    observed = abs(deltas.mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    chunk = max(1, 2_000_000 // len(deltas))  # bounds the sign matrix at ~2M entries
    for start in range(0, permutations, chunk):
        size = min(chunk, permutations - start)
        signs = rng.integers(0, 2, size=(size, len(deltas)), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ deltas) / len(deltas)
        extreme += int(np.count_nonzero(means >= observed - 1e-12))
    # +1 on both sides: the observed labelling is one of the possible ones.
    return (extreme + 1) / (permutations + 1)


# The metrics that apply a floor to the scores: only comparable within one score space.
FLOOR_METRICS = (PER_TURN, POOLED, "no_memory_answerable", "no_memory_unanswerable")


def run_space(info: RunInfo, outcomes: list[QueryOutcome]) -> str:
    """The run's score space in words: its store and how the raw value became the score.
    A saved run does not record its space, so it is read from the hits' own (raw, score)
    pairs (connectors/common/score_spaces.py)."""
    how = formula_of_pairs((hit.raw_score, hit.score) for outcome in outcomes for hit in outcome.hits)
    return describe_formula(info.store, how)


def compare_runs(
    run_a: RunInfo,
    outcomes_a: list[QueryOutcome],
    run_b: RunInfo,
    outcomes_b: list[QueryOutcome],
    judged: JudgedSet,
    metric: str,
    *,
    floor: float | None = None,
    permutations: int = PERMUTATIONS,
) -> Comparison:
    if run_a.set_hash != run_b.set_hash:
        raise CompareError(
            f"runs {run_a.run_id} and {run_b.run_id} were judged against different versions of "
            f"their judged sets ({run_a.set_name} {run_a.set_hash} vs {run_b.set_name} {run_b.set_hash})"
        )
    if metric == POOLED:
        # The paired test needs one figure per question; a pooled ratio has none of its own.
        raise CompareError(
            f"{POOLED} is one ratio over every question, with no per-question figure to pair: compare {PER_TURN} "
            "(the mean over questions) instead"
        )
    if metric in FLOOR_METRICS:
        space_a, space_b = run_space(run_a, outcomes_a), run_space(run_b, outcomes_b)
        if space_a != space_b:
            raise CompareError(
                f"{metric} applies one floor to both runs, but their scores are in different spaces (A: {space_a}; "
                f"B: {space_b}): the same floor keeps different memories in each. Compare a ranking metric "
                "(recall, precision, mrr, ndcg, hit_rate), or calibrate a floor for each store"
            )
    n = min(run_a.k, run_b.k)
    figures_a = run_figures(judged.questions, outcomes_a, n, floor)
    figures_b = run_figures(judged.questions, outcomes_b, n, floor)
    if metric not in figures_a.names:
        raise CompareError(f"unknown metric {metric!r}; these runs have {', '.join(figures_a.names)}")
    rows_b: dict[str, QueryFigures] = {r.message_id: r for r in figures_b.per_query}
    deltas = []
    for row_a in figures_a.per_query:
        row_b = rows_b.get(row_a.message_id)
        if row_b is None:
            continue
        va, vb = row_a.values.get(metric), row_b.values.get(metric)
        if va is None or vb is None:
            continue
        deltas.append(QueryDelta(row_a.message_id, row_a.user_id, float(va), float(vb)))
    if not deltas:
        raise CompareError(f"no question has {metric} in both runs")
    values = np.array([d.delta for d in deltas])
    return Comparison(
        metric=metric,
        run_a=run_a,
        run_b=run_b,
        deltas=deltas,
        mean_a=float(np.mean([d.a for d in deltas])),
        mean_b=float(np.mean([d.b for d in deltas])),
        wins=int(np.sum(values > TIE_TOLERANCE)),
        ties=int(np.sum(np.abs(values) <= TIE_TOLERANCE)),
        losses=int(np.sum(values < -TIE_TOLERANCE)),
        p_value=paired_randomisation_p(values, permutations),
    )


def inspect_link(
    query: str, user_id: str | None, k: int, floor: float, base: str = "/inspect", store: Mapping[str, str] | None = None,
    *, as_of: str | None = None,
) -> str:
    """The Inspect page's link for one question (the parameters it restores);
    ``store``: the parameters that name the run's store and settings
    (dashboard/store_link.py), so the page ranks as the run did; ``as_of``: the
    run's clock, so the page ranks the store as it was then. The floor goes in at
    full precision (a shipped floor of 0.36577 is not 0.37)."""
    params = {"query": query, "user": user_id or "", "k": str(max(1, min(k, 50))), "floor": floor_text(floor),
              "as_of": as_of or ""}
    # A store setting may be empty on purpose (an empty path: the demo data).
    return f"{base}?{urlencode({**{key: v for key, v in params.items() if v}, **(store or {})})}"


def summary_lines(comparison: Comparison, worst: int = 10) -> list[str]:
    c = comparison
    lines = [
        f"A {c.run_a.run_id} ({c.run_a.name})",
        f"B {c.run_b.run_id} ({c.run_b.name})",
        f"{c.metric} A {c.mean_a:.4f} B {c.mean_b:.4f} delta {c.mean_delta:+.4f}",
        f"questions {len(c.deltas)}: B wins {c.wins}, ties {c.ties}, losses {c.losses}",
        f"p-value {c.p_value:.4f} (paired randomisation test, {PERMUTATIONS} sign flips, seed {SEED})",
    ]
    lost = c.worst(worst)
    if lost:
        lines.append(f"lost most ({c.metric} A -> B):")
        lines += [f"  {d.message_id} user {d.user_id or '-'} {d.a:.4f} -> {d.b:.4f} ({d.delta:+.4f})" for d in lost]
    return lines
